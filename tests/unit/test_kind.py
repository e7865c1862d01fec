"""chaoskit.cluster.kind: node containers from `docker ps` and the kind command lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaoskit.cluster.kind import Kind, control_plane, node_kubectl
from chaoskit.components import apiserver
from chaoskit.seams.nodecontainers import NodeContainer, node_containers
from chaoskit.seams.shell import FakeRunner

IMAGE = "kindest/node:v1.34.0"
PS = ("docker", "ps")


def _ps_line(name: str, role: str, state: str = "running", cluster: str = "chaoskit") -> str:
    return json.dumps(
        {
            "Command": '"/usr/local/bin/entr…"',
            "ID": "0123456789ab",
            "Image": IMAGE,
            "Labels": f"io.x-k8s.kind.cluster={cluster},io.x-k8s.kind.role={role}",
            "Names": name,
            "State": state,
            "Status": "Up 5 minutes",
        }
    )


@pytest.fixture
def runner() -> FakeRunner:
    out = (
        "\n".join(
            [
                _ps_line("chaoskit-worker2", "worker"),
                _ps_line("chaoskit-worker", "worker", state="exited"),
                _ps_line("chaoskit-control-plane", "control-plane"),
            ]
        )
        + "\n"
    )
    return FakeRunner(responses={PS: out, ("docker", "exec"): "ok\n"})


def test_node_containers_parses_docker_ps_json_lines_control_plane_first(runner: FakeRunner) -> None:
    assert node_containers(runner, "chaoskit") == [
        NodeContainer("chaoskit-control-plane", "control-plane", IMAGE, "running"),
        NodeContainer("chaoskit-worker", "worker", IMAGE, "exited"),
        NodeContainer("chaoskit-worker2", "worker", IMAGE, "running"),
    ]


def test_node_containers_filters_docker_ps_on_the_cluster_label(runner: FakeRunner) -> None:
    node_containers(runner, "chaoskit")
    assert runner.calls == [
        ("docker", "ps", "-a", "--filter", "label=io.x-k8s.kind.cluster=chaoskit", "--format", "{{json .}}"),
    ]


def test_node_containers_of_a_missing_cluster_is_empty() -> None:
    assert node_containers(FakeRunner(), "nothing") == []


def test_node_container_without_role_label_has_empty_role() -> None:
    line = json.dumps({"Names": "odd", "Image": IMAGE, "State": "running", "Labels": "io.x-k8s.kind.cluster=chaoskit"})
    (node,) = node_containers(FakeRunner(responses={PS: line}), "chaoskit")
    assert node.role == ""


def test_node_container_api_is_where_docker_publishes_the_api_servers_port_when_asked() -> None:
    row = json.loads(_ps_line("chaoskit-control-plane", "control-plane"))
    line = json.dumps({**row, "Ports": "0.0.0.0:8080->80/tcp, 127.0.0.1:33159->6443/tcp"})
    (node,) = node_containers(FakeRunner(responses={PS: line}), "chaoskit", apiserver.PORT)
    assert node.api == "127.0.0.1:33159"
    (unasked,) = node_containers(FakeRunner(responses={PS: line}), "chaoskit")
    assert unasked.api == ""


def test_control_plane_names_the_control_plane_container(runner: FakeRunner) -> None:
    assert control_plane(runner, "chaoskit") == "chaoskit-control-plane"


def test_control_plane_of_a_cluster_without_one_is_a_lookup_error() -> None:
    runner = FakeRunner(responses={PS: _ps_line("chaoskit-worker", "worker")})
    with pytest.raises(LookupError, match="no control-plane"):
        control_plane(runner, "chaoskit")


def test_node_kubectl_runs_kubectl_inside_the_control_plane(runner: FakeRunner) -> None:
    assert node_kubectl(runner, "chaoskit", "get", "nodes") == "ok\n"
    assert runner.calls[-1] == (
        "docker",
        "exec",
        "-i",
        "chaoskit-control-plane",
        "kubectl",
        "--kubeconfig=/etc/kubernetes/admin.conf",
        "get",
        "nodes",
    )


def test_kind_create_argv(tmp_path: Path) -> None:
    runner = FakeRunner()
    kind = Kind(runner, tmp_path / "bin" / "kind")

    kind.create("chaoskit", tmp_path / "kind.yaml", IMAGE)

    assert runner.calls == [
        (
            str(tmp_path / "bin" / "kind"),
            "create",
            "cluster",
            "--name",
            "chaoskit",
            "--config",
            str(tmp_path / "kind.yaml"),
            "--image",
            IMAGE,
        )
    ]


def test_kind_clusters_lists_non_blank_lines(tmp_path: Path) -> None:
    kind_bin = tmp_path / "kind"
    runner = FakeRunner(responses={(str(kind_bin), "get", "clusters"): "chaoskit\n\nother\n"})
    assert Kind(runner, kind_bin).clusters() == ["chaoskit", "other"]


def test_kind_delete_argv() -> None:
    runner = FakeRunner()
    Kind(runner, Path("/cache/bin/kind")).delete("chaoskit")
    assert runner.calls == [("/cache/bin/kind", "delete", "cluster", "--name", "chaoskit")]


def _archive(path: Path, tag: str, config: str) -> Path:
    import io
    import tarfile

    data = json.dumps([{"Config": f"{config}.json", "RepoTags": [tag], "Layers": []}]).encode()
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize(
    ("held", "load"),
    [
        ({}, ["--name", "chaoskit"]),  # a new cluster: every node, no --nodes
        ({"cp": "abc", "w1": "abc", "w2": "old"}, ["--name", "chaoskit", "--nodes", "w2"]),  # one node has another
        ({"cp": "abc", "w1": "abc", "w2": "abc"}, None),  # a second install: nothing to load
    ],
)
def test_an_archive_is_loaded_only_into_the_nodes_that_lack_its_image(
    tmp_path: Path, held: dict[str, str], load: list[str] | None
) -> None:
    from chaoskit.seams.shell import Completed

    archive = _archive(tmp_path / "image.tar", "docker.io/chaoskit/chaoskit:v1", "abc")
    ps = "\n".join(_ps_line(n, r) for n, r in [("cp", "control-plane"), ("w1", "worker"), ("w2", "worker")])

    def answer(argv: tuple[str, ...]) -> Completed | None:
        if argv[:2] == PS:
            return Completed(argv, 0, ps)
        if argv[:2] == ("docker", "exec") and argv[3:5] == ("crictl", "inspecti"):
            assert argv[-1] == "docker.io/chaoskit/chaoskit:v1"
            node = argv[2]
            return (
                Completed(argv, 0, json.dumps({"status": {"id": f"sha256:{held[node]}"}}))
                if node in held
                else (Completed(argv, 1, "", "no such image"))
            )
        return None

    runner = FakeRunner(responder=answer)
    Kind(runner, Path("/cache/bin/kind")).load_archive("chaoskit", archive)
    loads = [c for c in runner.calls if c[:3] == ("/cache/bin/kind", "load", "image-archive")]
    assert loads == ([] if load is None else [("/cache/bin/kind", "load", "image-archive", *load, str(archive))])


def test_an_archive_for_one_role_is_loaded_into_that_roles_nodes_only(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "image.tar", "docker.io/chaoskit/kwok:v0.8.0", "abc")
    ps = "\n".join(_ps_line(n, r) for n, r in [("cp", "control-plane"), ("w1", "worker"), ("w2", "worker")])
    runner = FakeRunner(responses={PS: ps, ("docker", "exec"): ""})  # no node holds it
    Kind(runner, Path("/cache/bin/kind")).load_archive("chaoskit", archive, role="control-plane")
    assert runner.calls[-1] == (
        "/cache/bin/kind",
        "load",
        "image-archive",
        "--name",
        "chaoskit",
        "--nodes",
        "cp",
        str(archive),
    )
    assert not [c for c in runner.calls if c[:3] == ("docker", "exec", "w1")]  # not even asked


def test_an_unreadable_archive_is_loaded_everywhere_for_kind_to_judge(tmp_path: Path) -> None:
    (tmp_path / "image.tar").write_text("not a tar")
    runner = FakeRunner(responses={PS: _ps_line("cp", "control-plane")})
    Kind(runner, Path("/cache/bin/kind")).load_archive("chaoskit", tmp_path / "image.tar")
    assert runner.calls[-1] == (
        "/cache/bin/kind",
        "load",
        "image-archive",
        "--name",
        "chaoskit",
        str(tmp_path / "image.tar"),
    )
