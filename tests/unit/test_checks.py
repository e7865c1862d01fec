"""Steady-state checks judge the cluster from what the API says."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from chaoskit.checks.cluster import (
    ApiServerReady,
    ClusterHealthy,
    KubeSystemReady,
    LeadersRenewing,
    NodeChecks,
    NodesReady,
)
from chaoskit.env import Env
from chaoskit.model.params import NoParams
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec


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


def _lease(holder: str, renewed_ago: float) -> dict:  # type: ignore[type-arg]
    renew = datetime.fromtimestamp(time.time() - renewed_ago, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {"spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "renewTime": renew}}


def test_leaders_renewing_fails_on_a_lease_the_api_outage_left_behind_while_the_pods_still_read_ready() -> None:
    env = _env()
    assert isinstance(env.kube, FakeKube)
    leases = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    env.kube.objects[f"{leases}/kube-scheduler"] = _lease("cp_1a2b", 1.0)
    env.kube.objects[f"{leases}/kube-controller-manager"] = _lease("cp_3c4d", 16.0)
    out = LeadersRenewing().run(env, NoParams())
    assert not out.ok and out.detail.startswith("no leader renewing: controller-manager (renewed 16s ago, holder cp_")
    assert not ClusterHealthy().run(env, NoParams()).ok
    excused = LeadersRenewing().run(env, NodeChecks.model_validate({"exceptNodes": ["cp"]}))
    assert excused.ok and excused.detail == "no leader lease to judge"
    env.kube.objects[f"{leases}/kube-controller-manager"] = _lease("cp_5e6f", 2.0)
    assert LeadersRenewing().run(env, NoParams()).detail == "leading: scheduler, controller-manager"


def test_a_cluster_without_leader_leases_has_none_to_judge() -> None:
    assert LeadersRenewing().run(_env(), NoParams()).detail == "no leader lease to judge"
