"""node.partitioned: its plan, and the kubelet diagnosis that tells a partitioned node from a stopped kubelet and says
when each of its pods is evicted."""

from __future__ import annotations

import copy
from typing import Any

from diagnose_evidence import NO_ANSWER, iso_at, kubelet, obj, titles

from chaoskit.cli.measure_node_loss import playbook
from chaoskit.components.node_lifecycle import go_duration, grace_period, toleration_of
from chaoskit.diagnosers.kit.sources import Fetched, Section
from chaoskit.diagnosers.kubelet import KubeletDiagnoser
from chaoskit.diagnosers.kubelet.partition import eviction_schedule, reach_of
from chaoskit.faults.node import TABLE, NodePartitioned
from chaoskit.model.params import NoParams
from chaoskit.seams.nodeexec import Node

SERVER = "https://chaoskit-control-plane:6443"
TIMED_OUT = Section(f"server {SERVER}\ncurl: (28) Connection timed out after 3002 milliseconds\n@@http 000", 28)


def pod(name: str, *, tolerations: list[dict[str, Any]] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "shop", **meta},
        "spec": {"tolerations": tolerations or []},
        "status": {"phase": "Running"},
    }


def unreachable(seconds: int | None) -> dict[str, Any]:
    t: dict[str, Any] = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}
    return t if seconds is None else {**t, "tolerationSeconds": seconds}


def tainted(at: float) -> dict[str, Any]:
    node = copy.deepcopy(obj("kubelet/node.json"))
    node["spec"]["taints"] = [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": iso_at(at)},
    ]
    return node


def test_the_plan_cuts_both_address_families_and_its_revert_fails_while_the_table_stands() -> None:
    plan = NodePartitioned().plan(Node("chaoskit-worker", "worker"), NoParams())
    cut = plan.apply[-1]
    assert "getent ahosts" in cut and "*:*) f=ip6" in cut  # IPv6 too: kubelet's dialer may pick either family
    for hook in ("output", "input", "forward"):
        assert f"hook {hook} priority raw" in cut
    assert plan.undo == (f"nft delete table inet {TABLE} 2>/dev/null; true",)
    assert plan.verify[0].startswith("if out=$(nft list tables); then") and f"'^table inet {TABLE}$'" in plan.verify[0]
    assert "exists: an earlier injection was not reverted" in plan.apply[0]


def test_what_kubelet_dials_and_what_it_got_are_read_from_the_node() -> None:
    server, answer = reach_of(TIMED_OUT)
    assert server == SERVER and answer is not None and answer.timed_out and not answer.answered
    assert reach_of(None) == ("", None)
    assert reach_of(Section("could not run", None)) == ("", None)


def test_a_pod_tolerates_the_unreachable_taint_for_its_seconds_the_default_or_for_ever() -> None:
    assert toleration_of(pod("a", tolerations=[unreachable(10)])) == 10
    assert toleration_of(pod("b")) == 300  # DefaultTolerationSeconds
    assert toleration_of(pod("c", tolerations=[unreachable(None)])) is None
    assert toleration_of(pod("d", tolerations=[{"operator": "Exists"}])) is None  # tolerates every taint


def test_the_eviction_schedule_says_when_each_pod_goes_from_the_taint_and_its_toleration() -> None:
    now = 1_000_000.0
    pods = [
        pod("web-1", tolerations=[unreachable(60)]),
        pod("web-2"),
        pod("gone", deletionTimestamp=iso_at(now - 4)),
        pod("agent", ownerReferences=[{"kind": "DaemonSet"}]),
        pod("forever", tolerations=[unreachable(None)]),
    ]
    assert eviction_schedule(pods, tainted(now - 20), now) == (
        "shop/forever: tolerates node.kubernetes.io/unreachable for ever: never evicted",
        "shop/gone: evicted 4s ago, Terminating until the node answers again",
        "shop/web-1: evicted in 40s (toleration 60s)",
        "shop/web-2: evicted in 280s (toleration 300s)",
    )
    before = eviction_schedule([pod("web-1", tolerations=[unreachable(60)])], obj("kubelet/node.json"), now)
    assert before == ("shop/web-1: evicted 60s after the node is tainted node.kubernetes.io/unreachable",)


def test_a_partitioned_node_is_named_with_its_pods_evictions_and_a_stopped_kubelet_is_not() -> None:
    ev = kubelet()
    at = ev.collected_at
    pods = Fetched({"items": [pod("web-1", tolerations=[unreachable(30)])]})
    cut = kubelet(api_reach=TIMED_OUT, pods=pods, node_obj=Fetched(tainted(at - 5)))
    found = [f for f in KubeletDiagnoser().analyze(cut) if "cut off from the API server" in f.title]
    assert len(found) == 1 and found[0].severity == "critical"
    assert SERVER in found[0].title and "timed out" in found[0].title
    schedule = [line for e in found[0].evidence for line in e.log_lines if "web-1" in line]
    assert schedule == ["shop/web-1: evicted in 25s (toleration 30s)"]
    # the same silence from a node whose kubelet is down is kubelet's own failure, not a partition
    stopped = kubelet(api_reach=TIMED_OUT, service="inactive", healthz=NO_ANSWER, pods=pods)
    assert not [t for t in titles(KubeletDiagnoser().analyze(stopped)) if "cut off" in t]
    # an answer from the node, or a TLS failure (the path is open), is no partition either
    answered = Section(f"server {SERVER}\nok\n@@http 200", 0)
    tls = Section(f"server {SERVER}\ncurl: (60) SSL certificate problem\n@@http 000", 60)
    for section in (answered, tls):
        assert not [t for t in titles(KubeletDiagnoser().analyze(kubelet(api_reach=section))) if "cut off" in t]


def test_the_grace_period_is_read_from_the_controller_managers_flags_or_is_its_default() -> None:
    assert go_duration("30s") == 30 and go_duration("1m0s") == 60 and go_duration("500ms") == 0.5
    assert go_duration("soon") is None and go_duration("30") is None
    assert grace_period(["kube-controller-manager", "--node-monitor-grace-period=30s"]) == 30
    assert grace_period(["kube-controller-manager"]) == 50


def test_measure_node_loss_builds_the_catalogs_run_with_its_toleration_and_hold() -> None:
    pb = playbook("chaoskit-node-loss-x", "worker", 10, 65.0)
    assert pb.spec.workload.toleration_seconds == 10 and pb.spec.namespace == "chaoskit-node-loss-x"
    (step,) = pb.spec.steps
    assert step.fault == "node.partitioned" and [m.type for m in pb.spec.measurements] == ["node_loss"]
