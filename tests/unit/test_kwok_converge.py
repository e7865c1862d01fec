"""Setting the number of simulated nodes through the Kube seam, kwok's image built and loaded first, and the CLI.

FakeKwok plays what the cluster would do: a Deployment applied becomes available, and kwok reports every simulated
node it is given Ready at once.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from chaoskit.cli import cli
from chaoskit.cli import cluster as cluster_cli
from chaoskit.cluster import build, up
from chaoskit.cluster.cache import Cache
from chaoskit.cluster.kwok import controller, simulate
from chaoskit.cluster.kwok.converge import Converged, converge, not_ready, simulated_names
from chaoskit.cluster.kwok.daemonsets import NOT_SIMULATED
from chaoskit.model.kwok import is_simulated
from chaoskit.progress import Progress
from chaoskit.seams.kube import Conflict, FakeKube, KubeError, Obj, object_path
from chaoskit.seams.nodecontainers import CLUSTER_LABEL, ROLE_LABEL
from chaoskit.seams.shell import FakeRunner


class FakeKwok(FakeKube):
    """The API with the Deployment controller and kwok at work: both answer at once."""

    def _store(self, path: str, obj: Obj) -> Obj:
        if path == controller.DEPLOYMENT_PATH:
            status = {"observedGeneration": 1, "updatedReplicas": 1, "availableReplicas": 1}
            obj = {**obj, "metadata": {**obj["metadata"], "generation": 1}, "status": status}
        elif path.startswith("/api/v1/nodes/") and is_simulated(obj):
            obj = {**obj, "status": {**obj.get("status", {}), "conditions": [{"type": "Ready", "status": "True"}]}}
        return super()._store(path, obj)


def _node(name: str) -> Obj:
    return {"metadata": {"name": name, "labels": {}}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def _daemonset(namespace: str, name: str, tolerations: list[Obj]) -> tuple[str, Obj]:
    pod = {"tolerations": tolerations, "containers": [{"name": name}]}
    ds = {"metadata": {"name": name, "namespace": namespace}, "spec": {"template": {"spec": pod}}}
    return f"/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}", ds


EVERY = [{"operator": "Exists"}]
KUBE_PROXY = "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy"


def _cluster(kube: type[FakeKube] = FakeKwok) -> FakeKube:
    """Two real nodes, kind's kube-proxy, chaoskit's netd, someone's node exporter and a DaemonSet for GPUs only."""
    return kube(
        {
            "/api/v1/nodes/chaoskit-control-plane": _node("chaoskit-control-plane"),
            "/api/v1/nodes/chaoskit-worker": _node("chaoskit-worker"),
            **dict(
                [
                    _daemonset("kube-system", "kube-proxy", EVERY),
                    _daemonset("kube-system", "chaoskit-netd", EVERY),
                    _daemonset("monitoring", "node-exporter", EVERY),
                    _daemonset("kube-system", "gpu-plugin", [{"key": "nvidia.com/gpu", "operator": "Exists"}]),
                ]
            ),
        }
    )


def _has_affinity(kube: FakeKube, path: str) -> bool:
    spec = kube.objects[path]["spec"]["template"]["spec"]
    terms = (spec.get("affinity") or {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    return bool(terms) and all(NOT_SIMULATED in t["matchExpressions"] for t in terms["nodeSelectorTerms"])


def test_the_first_simulated_nodes_come_with_the_controller_and_the_daemonsets_kept_off() -> None:
    kube, said = _cluster(), []
    done = converge(kube, 3, image_id="sha256:abc", say=said.append)
    assert done == Converged(
        3,
        created=("kwok-node-0", "kwok-node-1", "kwok-node-2"),
        patched=("kube-system/chaoskit-netd", "kube-system/kube-proxy"),
        elsewhere=("monitoring/node-exporter",),
        controller="applied",
    )
    assert (
        simulated_names(kube) == ["kwok-node-0", "kwok-node-1", "kwok-node-2"]
        and not_ready(kube, ["kwok-node-2"]) == []
    )
    assert all(object_path(o) in kube.objects for o in controller.objects())
    annotations = kube.objects[controller.DEPLOYMENT_PATH]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["chaoskit.dev/image-id"] == "sha256:abc"
    assert _has_affinity(kube, KUBE_PROXY) and _has_affinity(
        kube, "/apis/apps/v1/namespaces/kube-system/daemonsets/chaoskit-netd"
    )
    assert not _has_affinity(kube, "/apis/apps/v1/namespaces/monitoring/daemonsets/node-exporter")
    assert not _has_affinity(kube, "/apis/apps/v1/namespaces/kube-system/daemonsets/gpu-plugin")  # never placed there
    assert "monitoring/node-exporter" in " ".join(said)


def test_the_daemonsets_are_patched_before_any_simulated_node_exists() -> None:
    kube = _cluster()
    converge(kube, 1)
    writes = [(m, p) for m, p in kube.calls if m in ("PATCH", "POST")]
    assert writes[0] == ("PATCH", "/apis/apps/v1/namespaces/kube-system/daemonsets/chaoskit-netd")
    assert writes.index(("POST", "/api/v1/nodes")) > writes.index(("PATCH", KUBE_PROXY))


def test_fewer_nodes_deletes_the_highest_and_patches_nothing_again() -> None:
    kube = _cluster()
    converge(kube, 12)
    done = converge(kube, 10)
    assert done.deleted == ("kwok-node-10", "kwok-node-11") and done.created == () and done.patched == ()
    assert simulated_names(kube)[-1] == "kwok-node-9" and len(simulated_names(kube)) == 10
    assert "/api/v1/nodes/chaoskit-worker" in kube.objects


def test_zero_removes_every_simulated_node_and_the_controller_and_keeps_the_affinity() -> None:
    kube = _cluster()
    converge(kube, 2)
    done = converge(kube, 0)
    assert done == Converged(0, deleted=("kwok-node-0", "kwok-node-1"), controller="removed")
    assert simulated_names(kube) == [] and not [o for o in controller.objects() if object_path(o) in kube.objects]
    assert _has_affinity(kube, KUBE_PROXY)  # matches every real node; removing it would restart kube-proxy again


def test_zero_on_a_cluster_that_never_had_any_changes_nothing() -> None:
    kube = _cluster()
    before = json.dumps(kube.objects, sort_keys=True)
    assert converge(kube, 0) == Converged(0)
    assert json.dumps(kube.objects, sort_keys=True) == before
    assert not [c for c in kube.calls if c[0] != "GET"]


def test_a_real_node_with_a_simulated_nodes_name_is_refused_and_left_alone() -> None:
    kube = _cluster()
    kube.objects["/api/v1/nodes/kwok-node-0"] = _node("kwok-node-0")
    with pytest.raises(KubeError, match="kwok-node-0 exists and is not a simulated one"):
        converge(kube, 1)
    assert not is_simulated(kube.objects["/api/v1/nodes/kwok-node-0"])


def test_a_controller_that_never_comes_up_is_named_with_where_to_look() -> None:
    kube = _cluster(FakeKube)  # nothing plays the Deployment controller or kwok
    with pytest.raises(
        KubeError, match=r"kwok's controller to be available \(kubectl -n kube-system logs deploy/kwok-controller\)"
    ):
        converge(kube, 1, timeout=0)


def test_nodes_kwok_never_reports_ready_are_waited_for_then_named() -> None:
    class NoKwok(FakeKwok):
        def _store(self, path: str, obj: Obj) -> Obj:
            return FakeKube._store(self, path, obj) if path.startswith("/api/v1/nodes/") else super()._store(path, obj)

    kube = _cluster(NoKwok)
    with pytest.raises(KubeError, match="1 simulated nodes Ready"):
        converge(kube, 1, timeout=0)
    assert not_ready(kube, ["kwok-node-0"]) == ["kwok-node-0"]


def test_a_daemonset_changed_between_read_and_patch_is_read_again() -> None:
    class Busy(FakeKwok):
        conflicts = 1

        def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
            if method == "PATCH" and path == KUBE_PROXY and self.conflicts:
                self.conflicts -= 1
                raise Conflict(f"PATCH {path}: HTTP 409 Conflict: the object has been modified")
            return super().request(method, path, body, query)

    kube = _cluster(Busy)
    assert "kube-system/kube-proxy" in converge(kube, 1).patched and _has_affinity(kube, KUBE_PROXY)
    assert kube.calls.count(("GET", KUBE_PROXY)) == 2


# --- kwok's image, then the nodes ----------------------------------------------------------------------------------


def _archive(path: Path) -> Path:
    data = json.dumps([{"Config": "abc.json", "RepoTags": ["docker.io/chaoskit/kwok:v0.8.0"], "Layers": []}]).encode()
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


def _ps(*nodes: tuple[str, str]) -> str:
    rows = [
        {"Names": n, "Labels": f"{CLUSTER_LABEL}=chaoskit,{ROLE_LABEL}={r}", "Image": "i", "State": "running"}
        for n, r in nodes
    ]
    return "\n".join(json.dumps(r) for r in rows)


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """kwok's image and kind, as the cache would hand them; what was built, in order."""
    done: list[str] = []

    def image(cache: Cache, runner: Any, progress: Progress) -> Path:
        done.append("kwok image")
        return _archive(tmp_path / "kwok.tar")

    def binaries(names: tuple[str, ...], cache: Cache, runner: Any, progress: Progress) -> dict[str, Path]:
        done.extend(names)
        return {n: tmp_path / n for n in names}

    monkeypatch.setattr(build, "build_kwok_image", image)
    monkeypatch.setattr(build, "build_binaries", binaries)
    return done


def test_simulating_loads_kwoks_image_into_the_control_plane_then_converges(built: list[str], tmp_path: Path) -> None:
    runner = FakeRunner(
        {("docker", "ps"): _ps(("chaoskit-control-plane", "control-plane"), ("chaoskit-worker", "worker"))}
    )
    kube = _cluster()
    done = simulate.simulate("chaoskit", 2, kube, runner, Cache(tmp_path / "cache"), Progress(io.StringIO()))
    assert built == ["kwok image", "kind"] and done.created == ("kwok-node-0", "kwok-node-1")
    (load,) = [c for c in runner.calls if c[1:3] == ("load", "image-archive")]
    assert load[3:] == ("--name", "chaoskit", "--nodes", "chaoskit-control-plane", str(tmp_path / "kwok.tar"))
    template = kube.objects[controller.DEPLOYMENT_PATH]["spec"]["template"]
    assert template["metadata"]["annotations"]["chaoskit.dev/image-id"] == "sha256:abc"


def test_simulating_none_builds_and_loads_nothing(built: list[str], tmp_path: Path) -> None:
    runner = FakeRunner()
    done = simulate.simulate("chaoskit", 0, _cluster(), runner, Cache(tmp_path / "cache"), Progress(io.StringIO()))
    assert built == [] and runner.calls == [] and done == Converged(0)


# --- cluster up --kwok-nodes -----------------------------------------------------------------------------------------

KUBECTL = ("docker", "exec", "-i", "chaoskit-control-plane", "kubectl", "--kubeconfig=/etc/kubernetes/admin.conf")


@pytest.fixture
def simulated(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, Any]]:
    calls: list[tuple[str, int, Any]] = []
    monkeypatch.setattr(up, "simulate", lambda cluster, count, kube, *rest: calls.append((cluster, count, kube)))
    return calls


@pytest.mark.parametrize(
    ("count", "listed", "found", "asked"),
    [
        (0, "", "", False),  # the default on a cluster without kwok: no API client, nothing changed
        (0, "node/kwok-node-0\n", "", True),  # simulated nodes left: removed
        (0, "", "deployment.apps/kwok-controller\n", True),  # the controller alone: removed
        (3, "", "", True),
    ],
)
def test_cluster_up_sets_the_simulated_nodes_only_when_there_is_something_to_do(
    simulated: list[tuple[str, int, Any]], tmp_path: Path, count: int, listed: str, found: str, asked: bool
) -> None:
    runner = FakeRunner(
        {
            ("docker", "ps"): _ps(("chaoskit-control-plane", "control-plane")),
            (*KUBECTL, "get", "nodes", "-l", "type=kwok"): listed,
            (*KUBECTL, "get", "deployment", "-n", "kube-system", "kwok-controller"): found,
        }
    )
    connected: list[str] = []
    kube = FakeKube()

    def connect(context: str) -> FakeKube:
        connected.append(context)
        return kube

    up.simulated_nodes("chaoskit", count, runner, Cache(tmp_path), Progress(io.StringIO()), connect)
    assert simulated == ([("chaoskit", count, kube)] if asked else []) and connected == (
        ["kind-chaoskit"] if asked else []
    )


def test_cluster_status_counts_the_simulated_nodes_apart() -> None:
    items = [
        {
            "metadata": {"name": "chaoskit-control-plane"},
            "status": {"nodeInfo": {"kubeletVersion": "v1.34.4"}, "conditions": [{"type": "Ready", "status": "True"}]},
        },
        {
            "metadata": {"name": "kwok-node-0", "labels": {"type": "kwok"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        },
        {"metadata": {"name": "kwok-node-1", "labels": {"type": "kwok"}}, "status": {}},
    ]
    runner = FakeRunner(
        {
            ("docker", "ps"): _ps(("chaoskit-control-plane", "control-plane")),
            (*KUBECTL, "get", "--raw", "/readyz"): "ok",
            (*KUBECTL, "get", "nodes"): json.dumps({"items": items}),
        }
    )
    st = up.status("chaoskit", runner)
    assert [n.name for n in st.nodes] == ["chaoskit-control-plane"] and (st.simulated_nodes, st.simulated_ready) == (
        2,
        1,
    )


# --- the command line ----------------------------------------------------------------------------------------------


@pytest.fixture
def cli_simulate(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def fake(
        cluster: str, count: int, kube: Any, runner: Any, cache: Cache, progress: Any, *, timeout: float
    ) -> Converged:
        calls.append({"cluster": cluster, "count": count, "kube": kube, "cache": cache.root, "timeout": timeout})
        return Converged(count, created=tuple(f"kwok-node-{i}" for i in range(count)), controller="applied")

    monkeypatch.setattr(cluster_cli, "simulate", fake)
    monkeypatch.setattr(
        cluster_cli.Kube, "connect", classmethod(lambda cls, kubeconfig, context: ("kube", kubeconfig, context))
    )
    return calls


def test_kwok_nodes_sets_the_count_on_the_named_clusters_context(
    cli_simulate: list[dict[str, Any]], tmp_path: Path
) -> None:
    done = CliRunner().invoke(
        cli, ["cluster", "kwok-nodes", "3", "--cluster", "lab", "--cache", str(tmp_path), "--timeout", "30"]
    )
    assert done.exit_code == 0, done.output
    assert cli_simulate == [
        {"cluster": "lab", "count": 3, "kube": ("kube", None, "kind-lab"), "cache": tmp_path, "timeout": 30.0}
    ]
    assert "cluster lab: 3 simulated node(s), 3 created, 0 deleted; kwok's controller applied" in done.output


def test_kwok_nodes_speaks_json_and_follows_the_global_context(cli_simulate: list[dict[str, Any]]) -> None:
    done = CliRunner().invoke(cli, ["--context", "mine", "cluster", "kwok-nodes", "0", "-o", "json"])
    assert done.exit_code == 0, done.output
    assert cli_simulate[0]["kube"] == ("kube", None, "mine") and json.loads(done.output)["count"] == 0


@pytest.mark.parametrize("count", ["-1", "5001", "many"])
def test_kwok_nodes_refuses_a_count_it_cannot_hold(cli_simulate: list[dict[str, Any]], count: str) -> None:
    done = CliRunner().invoke(
        cli, ["cluster", "kwok-nodes", "--", count] if count == "-1" else ["cluster", "kwok-nodes", count]
    )
    assert done.exit_code == 2 and cli_simulate == []


def test_cluster_up_passes_the_simulated_node_count_and_how_to_reach_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_up(name: Any, config: Any, image: Any, runner: Any, cache: Any, progress: Any, **kw: Any) -> up.UpResult:
        seen.update(kw)
        return up.UpResult("chaoskit", False, "img", 1.0, "kind-chaoskit", kw["kwok_nodes"])

    monkeypatch.setattr(cluster_cli.ops, "up", fake_up)
    monkeypatch.setattr(cluster_cli.Kube, "connect", classmethod(lambda cls, kubeconfig, context: ("kube", context)))
    done = CliRunner().invoke(cli, ["cluster", "up", "--kwok-nodes", "4", "--image", "build"])
    assert done.exit_code == 0, done.output
    assert seen["kwok_nodes"] == 4 and seen["connect"]("kind-chaoskit") == ("kube", "kind-chaoskit")
    assert "4 simulated nodes" in done.output
    default = CliRunner().invoke(cli, ["cluster", "up", "--image", "build"])
    assert default.exit_code == 0 and seen["kwok_nodes"] == 0
