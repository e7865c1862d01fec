"""Steady-state checks judge the cluster from what the API says."""

from __future__ import annotations

from chaoskit.checks.cluster import ApiServerReady, ClusterHealthy, KubeSystemReady, NodesReady
from chaoskit.cluster.kube import FakeKube
from chaoskit.cluster.nodeexec import FakeNodeExec
from chaoskit.env import Env
from chaoskit.model.params import NoParams


def _obj(name: str, ready: bool) -> dict:  # type: ignore[type-arg]
    return {"metadata": {"name": name}, "status": {"conditions": [{"type": "Ready", "status": str(ready)}]}}


def _env(nodes_ready: bool = True, pod_ready: bool = True, readyz: str = "ok") -> Env:
    kube = FakeKube(
        {
            "/api/v1/nodes/a": _obj("a", True),
            "/api/v1/nodes/b": _obj("b", nodes_ready),
            "/api/v1/namespaces/kube-system/pods/coredns": _obj("coredns", pod_ready),
        },
        raw_paths={"/readyz": readyz},
    )
    return Env(kube, FakeNodeExec(), "chaoskit")


def test_nodes_ready_names_the_node_that_is_not() -> None:
    out = NodesReady().run(_env(nodes_ready=False), NoParams())
    assert not out.ok and out.detail == "not Ready: b"
    assert NodesReady().run(_env(), NoParams()).detail == "2 nodes Ready"


def test_kube_system_ready_names_the_pod_that_is_not() -> None:
    assert KubeSystemReady().run(_env(pod_ready=False), NoParams()).detail == "not Ready: coredns"


def test_apiserver_ready_shows_failing_readyz_checks() -> None:
    out = ApiServerReady().run(_env(readyz="[-]etcd failed"), NoParams())
    assert not out.ok and "[-]etcd" in out.detail


def test_cluster_healthy_needs_all_three() -> None:
    assert ClusterHealthy().run(_env(), NoParams()).ok
    assert not ClusterHealthy().run(_env(pod_ready=False), NoParams()).ok
