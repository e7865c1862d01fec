"""chaoskit.cluster.config: reading kind-config.yaml and checking its shape."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from chaoskit.cluster import config
from chaoskit.errors import EXIT_USAGE, UsageError

REPO_KIND_CONFIG = Path(__file__).resolve().parents[2] / "kind-config.yaml"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "kind.yaml"
    path.write_text(text)
    return path


def test_repository_kind_config_is_one_control_plane_and_two_workers() -> None:
    cfg = config.load(REPO_KIND_CONFIG)
    assert (cfg.name, cfg.control_planes, cfg.workers) == ("chaoskit", 1, 2)


def test_name_override_replaces_the_name_in_the_rendered_config() -> None:
    cfg = config.load(REPO_KIND_CONFIG, name="other")

    assert cfg.name == "other"
    rendered = YAML(typ="safe").load(cfg.text)
    assert rendered["name"] == "other"
    assert "name: chaoskit" not in cfg.text


def test_rendered_config_keeps_the_kubeadm_config_patches() -> None:
    cfg = config.load(REPO_KIND_CONFIG)

    assert "kubeadmConfigPatches" in cfg.text
    patches = YAML(typ="safe").load(cfg.text)["kubeadmConfigPatches"]
    kinds = [YAML(typ="safe").load(p)["kind"] for p in patches]
    assert kinds == ["InitConfiguration", "ClusterConfiguration", "KubeletConfiguration", "KubeProxyConfiguration"]
    # quotes and comments survive, so kind gets what the file says
    assert 'bind-address: "0.0.0.0"' in cfg.text
    assert "evictionPressureTransitionPeriod: 10s" in cfg.text


def test_rendered_config_reads_back_as_the_same_cluster() -> None:
    cfg = config.load(REPO_KIND_CONFIG, name="again")
    again = config.from_document(YAML().load(cfg.text), "rendered")
    assert again == cfg


def test_config_without_a_name_is_named_chaoskit(tmp_path: Path) -> None:
    path = _write(tmp_path, "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n")
    cfg = config.load(path)
    assert (cfg.name, cfg.control_planes, cfg.workers) == ("chaoskit", 1, 0)
    assert "name: chaoskit" in cfg.text


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n", id="kubernetes-manifest"),
        pytest.param("kind: Cluster\napiVersion: k3d.io/v1alpha5\n", id="other-tool-cluster"),
        pytest.param("- kind: Cluster\n  apiVersion: kind.x-k8s.io/v1alpha4\n", id="list"),
        pytest.param("", id="empty"),
        pytest.param("kind: Cluster\n  apiVersion: [unclosed\n", id="invalid-yaml"),
    ],
)
def test_non_kind_yaml_is_a_usage_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(UsageError) as info:
        config.load(_write(tmp_path, text))
    assert info.value.exit_code == EXIT_USAGE
    assert str(tmp_path / "kind.yaml") in str(info.value)


def test_missing_config_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read kind config"):
        config.load(tmp_path / "absent.yaml")


def test_two_control_planes_are_a_usage_error(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n"
        "nodes:\n  - role: control-plane\n  - role: control-plane\n  - role: worker\n",
    )
    with pytest.raises(UsageError, match=r"exactly one control-plane node \(found 2\)"):
        config.load(path)


def test_workers_only_is_a_usage_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n  - role: worker\n")
    with pytest.raises(UsageError, match=r"found 0"):
        config.load(path)


def test_a_config_without_aggregator_routing_gets_chaoskits_required_patch(tmp_path: Path) -> None:
    path = tmp_path / "one-node.yaml"
    path.write_text("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n  - role: control-plane\n")
    cfg = config.load(path)
    assert 'enable-aggregator-routing: "true"' in cfg.text
    assert cfg.workers == 0


MOUNTED = """kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
  - role: control-plane
    extraMounts:
      - {hostPath: patches, containerPath: /kind/patches}
"""


def test_a_relative_mount_is_taken_from_the_config_files_folder(tmp_path: Path) -> None:
    (tmp_path / "patches").mkdir()
    cfg = config.load(_write(tmp_path, MOUNTED))
    (mount,) = YAML(typ="safe").load(cfg.text)["nodes"][0]["extraMounts"]
    assert mount["hostPath"] == str(tmp_path / "patches")


def test_a_mount_that_does_not_exist_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"kind.yaml: extraMounts hostPath .*patches does not exist"):
        config.load(_write(tmp_path, MOUNTED))


def test_the_fingerprint_follows_the_mounted_files_not_where_they_live(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for where in (one, two):
        (where / "patches").mkdir(parents=True)
        (where / "patches" / "kube-scheduler+strategic.yaml").write_text("spec: {}\n")
    first, moved = config.load(_write(one, MOUNTED)), config.load(_write(two, MOUNTED))
    assert first.fingerprint == moved.fingerprint  # a clone elsewhere reuses the cluster
    (two / "patches" / "kube-scheduler+strategic.yaml").write_text("spec: {changed: true}\n")
    assert config.load(two / "kind.yaml").fingerprint != first.fingerprint
    (two / "kind.yaml").write_text(MOUNTED + "  - role: worker\n")
    assert config.load(two / "kind.yaml").fingerprint not in (first.fingerprint, moved.fingerprint)


def test_the_repository_config_mounts_kubeadms_patches_for_the_control_planes_probes() -> None:
    cfg = config.load(REPO_KIND_CONFIG)
    (mount,) = YAML(typ="safe").load(cfg.text)["nodes"][0]["extraMounts"]
    patches = sorted(p.name for p in Path(mount["hostPath"]).iterdir())
    assert patches == [f"{c}+strategic.yaml" for c in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")]
    for name in patches:
        (container,) = YAML(typ="safe").load(Path(mount["hostPath"], name).read_text())["spec"]["containers"]
        assert container["name"] == name.split("+")[0] and container["startupProbe"]["periodSeconds"] == 1
