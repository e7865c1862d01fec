"""Effect checks that observe the component, proven to fail when the injection is a no-op: kube-proxy.slow-sync's
rule-sync delay against a simulated kube-proxy sync runner, kubelet.cert-expired's journal and Node, and the handoff
that carries a certificate signed on the control-plane node to a worker."""

from __future__ import annotations

import time
from typing import Any

import pytest

from chaoskit.env import Env
from chaoskit.errors import ToolError
from chaoskit.faults.base import FaultPlan, Handoff, hand_over
from chaoskit.faults.kube_proxy import KubeProxySlowSync, SlowSyncParams
from chaoskit.faults.kubelet import EXPIRED_PEM, KubeletCertExpired
from chaoskit.measurements.rule_sync_delay import (
    SERVICE_PATH,
    SLICE_PATH,
    Change,
    DelayJudge,
    OnRules,
    endpoint,
    measure,
    probe_objects,
)
from chaoskit.model.params import NoParams
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.seams.shell import Completed, FakeRunner
from tests.unit.fake_kube_proxy import FAST, SimulatedKubeProxy

NODES = ("cp", "w1", "w2")
# the kind cluster the handoffs pick from: its first control-plane node makes, by name
CLUSTER_NODES = [Node("chaoskit-worker", "worker"), Node("chaoskit-control-plane", "control-plane")]

# --- the pure judge ----------------------------------------------------------------------------------------------


def judge(*changes: tuple[float, str], synced: frozenset[str] = frozenset()) -> DelayJudge:
    j = DelayJudge(("n",), threshold=15.0, synced=synced)
    j.changes = [Change(at, ip) for at, ip in changes]
    j.seen("n", 0.0, frozenset({"x"}))
    return j


def test_a_change_right_after_a_sync_that_waits_half_the_period_is_slow() -> None:
    j = judge((10.0, "a"), (10.2, "b"))
    j.seen("n", 10.1, frozenset({"a"}))  # change 0 synced at once: the node was idle
    assert j.verdict("n", now=20.0) is None  # change 1 has waited 9.8 s so far
    assert j.wants_change(20.0) is False  # it has not programmed change 1: a new change would not land after a sync
    assert j.verdict("n", now=25.7) is True
    j.seen("n", 40.2, frozenset({"a", "b"}))
    assert j.verdict("n", now=41.0) is True and j.delay("n", 41.0) == 30.0


def test_a_change_right_after_a_sync_programmed_sooner_means_no_slow_sync() -> None:
    j = judge((10.0, "a"), (10.2, "b"))
    j.seen("n", 10.1, frozenset({"a"}))
    j.seen("n", 11.1, frozenset({"a", "b"}))  # kind's own minSyncPeriod: 1 s
    assert j.verdict("n", now=11.2) is False and j.delay("n", 11.2) == 0.9


def test_the_first_change_tells_only_where_kube_proxy_had_already_synced() -> None:
    quick = judge((10.0, "a"))
    quick.seen("n", 10.1, frozenset({"a"}))
    assert quick.verdict("n", 11.0) is None  # maybe idle: no verdict either way
    assert quick.wants_change(11.0)
    waiting = judge((10.0, "a"))
    assert waiting.verdict("n", 30.0) is None  # kube-proxy may not have synced once since it started
    assert judge((10.0, "a"), synced=frozenset({"n"})).verdict("n", 30.0) is True


def test_a_change_made_before_the_node_synced_the_previous_one_does_not_count() -> None:
    j = judge((10.0, "a"), (10.2, "b"))  # change 1 made for another node while this one still waited
    j.seen("n", 25.0, frozenset({"a", "b"}))  # both in one sync
    assert j.verdict("n", 26.0) is None and j.wants_change(26.0)


# --- measure() against a simulated kube-proxy --------------------------------------------------------------------


def _cluster() -> FakeKube:
    service, endpoint_slice = probe_objects("198.51.100.1")
    service["spec"]["clusterIP"] = "10.96.0.99"
    return FakeKube({SERVICE_PATH: service, SLICE_PATH: endpoint_slice})


def _measure(periods: dict[str, float], synced_at_start: bool, threshold: float) -> Any:
    kube = _cluster()
    env = Env(kube, FakeNodeExec(), "chaoskit")

    def probe(env: Env, node: str, cluster_ip: str, on_rules: OnRules) -> SimulatedKubeProxy:
        assert cluster_ip == "10.96.0.99"
        return SimulatedKubeProxy(kube, node, periods[node], on_rules, synced_at_start)

    return measure(env, periods, threshold, timeout=3.0, timing=FAST, probe=probe, synced=lambda e, n: synced_at_start)


@pytest.mark.parametrize("just_restarted", [True, False], ids=["in-a-sync-cool-down", "idle"])
def test_slow_syncs_are_measured_on_every_node_whether_kube_proxy_just_synced_or_was_idle(just_restarted: bool) -> None:
    found = _measure(dict.fromkeys(NODES, 0.6), just_restarted, threshold=0.3)
    assert found.slow_everywhere, found
    assert found.changes == (1 if just_restarted else 2)  # idle: the first change is synced at once, the next waits
    assert all(d is not None and d >= 0.3 for d in found.delays.values()), found


def test_kinds_own_period_is_no_effect_and_is_told_within_two_changes() -> None:
    found = _measure(dict.fromkeys(NODES, 0.02), synced_at_start=True, threshold=0.3)  # the injection a no-op
    assert not found.slow_everywhere and False in found.verdicts.values()
    assert found.changes <= 3 and found.seconds < 1.5, found


def test_one_node_still_fast_is_no_effect() -> None:
    found = _measure({"cp": 0.6, "w1": 0.6, "w2": 0.02}, synced_at_start=False, threshold=0.3)
    assert found.verdicts["w2"] is False and not found.slow_everywhere, found


def test_the_first_change_replaces_what_an_earlier_measurement_left() -> None:
    kube = _cluster()
    kube.objects[SLICE_PATH]["endpoints"] = [endpoint(f"198.51.100.{i}") for i in (1, 2, 3)]
    env = Env(kube, FakeNodeExec(), "chaoskit")

    def probe(env: Env, node: str, cluster_ip: str, on_rules: OnRules) -> SimulatedKubeProxy:
        return SimulatedKubeProxy(kube, node, 0.02, on_rules, True)

    measure(env, ["n"], 0.3, timeout=1.0, timing=FAST, probe=probe, synced=lambda e, n: True)
    ips = [ep["addresses"][0] for ep in kube.objects[SLICE_PATH]["endpoints"]]
    assert ips[0] == "198.51.100.4" and len(ips) == len(set(ips)) <= 3


def test_slow_sync_effect_waits_for_every_kube_proxy_to_be_ready_before_measuring() -> None:
    plan = KubeProxySlowSync().plan(Node("cp", "control-plane"), SlowSyncParams())
    ds = {"status": {"desiredNumberScheduled": 3}}
    kube = FakeKube(
        {
            "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy": ds,
            "/api/v1/namespaces/kube-system/pods/a": {"metadata": {"name": "a", "labels": {}}},
        }
    )
    assert not KubeProxySlowSync().took_effect(Env(kube, FakeNodeExec(), "chaoskit"), plan)
    assert SERVICE_PATH not in [path for _, path in kube.calls]  # nothing measured


# --- kubelet.cert-expired ----------------------------------------------------------------------------------------


def _kubelet_env(expired_lines: int, ready: str) -> Env:
    def responder(argv: tuple[str, ...]) -> Completed | None:
        return Completed(argv, 0, f"{expired_lines}\n") if "journalctl -u kubelet" in argv[-1] else None

    node = {"status": {"conditions": [{"type": "Ready", "status": ready}]}}
    return Env(FakeKube({"/api/v1/nodes/w": node}), FakeNodeExec(FakeRunner(responder=responder)), "chaoskit")


def test_cert_expired_effect_is_kubelets_own_error_since_the_injection_and_the_node_not_ready() -> None:
    plan = KubeletCertExpired().plan(Node("w", "worker"), NoParams())
    assert KubeletCertExpired().took_effect(_kubelet_env(3, "Unknown"), plan)
    assert not KubeletCertExpired().took_effect(_kubelet_env(3, "True"), plan)  # the node still Ready
    # the apply lines removed: kubelet keeps running, its journal says nothing of the kind
    assert not KubeletCertExpired().took_effect(_kubelet_env(0, "True"), plan)
    assert not KubeletCertExpired().took_effect(_kubelet_env(0, "Unknown"), plan)  # NotReady for another reason


def test_cert_expired_reads_kubelets_journal_only_from_the_injection_on() -> None:
    env = _kubelet_env(1, "False")
    KubeletCertExpired().took_effect(env, KubeletCertExpired().plan(Node("w", "worker"), NoParams()))
    script = next(c[-1] for c in env.nodes.calls if "journalctl" in c[-1])
    assert 'journalctl -u kubelet --since "@$(cat /run/chaoskit/kubelet-cert-expired.since)"' in script
    assert "[ -s /run/chaoskit/kubelet-cert-expired.since ] &&" in script  # no bookmark, no effect


# --- handoffs ----------------------------------------------------------------------------------------------------

NODE_LIST = {
    "/api/v1/nodes/chaoskit-worker": {"metadata": {"name": "chaoskit-worker", "labels": {}}},
    "/api/v1/nodes/chaoskit-control-plane": {
        "metadata": {"name": "chaoskit-control-plane", "labels": {"node-role.kubernetes.io/control-plane": ""}}
    },
}


def test_cert_expired_on_a_worker_is_signed_on_the_control_plane_node_and_written_to_the_worker() -> None:
    plan = KubeletCertExpired().plan(Node("chaoskit-worker", "worker"), NoParams())
    (handoff,) = plan.handoffs
    assert handoff.source == "control-plane" and handoff.path == EXPIRED_PEM
    assert "/CN=system:node:chaoskit-worker" in handoff.make and "ca.key" in handoff.make
    pem = "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"
    runner = FakeRunner(responder=lambda argv: Completed(argv, 0, pem if argv[0] == "chaoskit-control-plane" else ""))
    nodes = FakeNodeExec(runner)
    hand_over(Env(FakeKube(NODE_LIST), nodes, "chaoskit"), plan, CLUSTER_NODES)
    made, written = nodes.calls
    assert made == ("chaoskit-control-plane", "sh", "-c", handoff.make)
    assert written[0] == "chaoskit-worker" and written[-1].endswith(f"cat > {EXPIRED_PEM}")
    assert "umask 077" in written[-1]
    # the CA key is read on the control-plane node only: nothing sent to the worker names it
    assert all("ca.key" not in part for part in written)


def test_a_handoff_that_cannot_be_made_stops_the_injection() -> None:
    plan = FaultPlan(
        "f",
        Node("chaoskit-worker", "worker"),
        ("true",),
        ("true",),
        ("true",),
        "s",
        handoffs=(Handoff("control-plane", "x", "/p"),),
    )
    nodes = FakeNodeExec(FakeRunner(responder=lambda argv: Completed(argv, 1, "", "no ca.key")))
    with pytest.raises(ToolError, match="no ca.key"):
        hand_over(Env(FakeKube(NODE_LIST), nodes, "chaoskit"), plan, CLUSTER_NODES)
    assert [c[0] for c in nodes.calls] == ["chaoskit-control-plane"]  # nothing written to the worker


def test_plans_without_handoffs_hand_nothing_over() -> None:
    nodes = FakeNodeExec()
    hand_over(
        Env(FakeKube(), nodes, "chaoskit"),
        KubeProxySlowSync().plan(Node("cp", "control-plane"), SlowSyncParams()),
        CLUSTER_NODES,
    )
    assert nodes.calls == []


# --- checks that once read back chaoskit's own action: each fails on the old read-back --------------------------


def _lease_env(renewed_ago: float | None, healthz: str = "ok", duration: int = 11) -> Env:
    from chaoskit.components import controller_manager as cm
    from chaoskit.diagnosers.kit.common import iso

    def responder(argv: tuple[str, ...]) -> Completed | None:
        if "ps -o stat=" in argv[-1]:
            return Completed(argv, 0, "T\n")  # the process chaoskit stopped: what the old checks read
        if any("10257/healthz" in a for a in argv):
            return Completed(argv, 0 if healthz else 7, healthz)
        return None

    spec: dict[str, Any] = {"holderIdentity": "cp_1", "leaseDurationSeconds": duration}
    if renewed_ago is not None:
        spec["renewTime"] = iso(time.time() - renewed_ago)
    return Env(FakeKube({cm.LEASE: {"spec": spec}}), FakeNodeExec(FakeRunner(responder=responder)), "chaoskit")


def test_a_hung_controller_manager_is_seen_by_its_lease_not_by_the_state_chaoskit_set() -> None:
    from chaoskit.faults.controller_manager import ControllerManagerHung

    fault = ControllerManagerHung()
    plan = fault.plan(Node("cp", "control-plane"), NoParams())
    assert not fault.took_effect(_lease_env(1.0), plan), "renewed a second ago: leading, whatever ps says"
    assert fault.took_effect(_lease_env(8.0), plan), "not renewed for more than half of its 11 s"
    assert not fault.took_effect(_lease_env(8.0, duration=30), plan), "the Lease's own duration, not a constant"
    assert not fault.recovered(_lease_env(8.0), plan)
    assert fault.recovered(_lease_env(1.0), plan) and not fault.recovered(_lease_env(1.0, healthz=""), plan)


def _rules_env(follows: bool) -> tuple[Env, FakeKube]:
    kube = FakeKube()

    def responder(argv: tuple[str, ...]) -> Completed | None:
        if "KUBE-SVC-" not in argv[-1]:
            return None
        path = next((p for p in kube.objects if "endpointslices/chaoskit-rules-w" in p), None)
        ips = [ip for ep in kube.objects[path]["endpoints"] for ip in ep["addresses"]] if path and follows else []
        return Completed(argv, 0, "\n".join(ips) + "\n")

    return Env(kube, FakeNodeExec(FakeRunner(responder=responder)), "chaoskit"), kube


def test_a_frozen_kube_proxy_is_seen_by_rules_that_do_not_follow_an_endpoint_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import chaoskit.faults.kube_proxy as kube_proxy

    monkeypatch.setattr(kube_proxy, "FOLLOW_S", 0.3)
    fault, plan = kube_proxy.KubeProxyFrozen(), kube_proxy.KubeProxyFrozen().plan(Node("w", "worker"), NoParams())
    env, _ = _rules_env(follows=True)
    assert not fault.took_effect(env, plan), "the rules follow: whatever state the process is in, it works"
    env, kube = _rules_env(follows=False)
    assert fault.took_effect(env, plan) and not fault.recovered(env, plan)
    changed = [ep["addresses"][0] for p, o in kube.objects.items() if "endpointslices" in p for ep in o["endpoints"]]
    assert changed and changed[0].startswith("198.51.100."), "each look changes the probe's endpoint"
    env, kube = _rules_env(follows=True)
    assert fault.recovered(env, plan)
    assert not [p for p in kube.objects if "chaoskit-rules-w" in p], "recovered: the probe Service is deleted"


def test_slow_sync_recovery_is_a_measured_fast_sync_not_the_period_read_back(monkeypatch: pytest.MonkeyPatch) -> None:
    import chaoskit.faults.kube_proxy as kube_proxy
    from chaoskit.measurements.rule_sync_delay import SyncDelays

    ds = {"status": {"desiredNumberScheduled": 1}}
    pod = {
        "metadata": {"name": "a", "labels": {"k8s-app": "kube-proxy"}},
        "spec": {"nodeName": "w"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    verdicts: list[bool | None] = []
    monkeypatch.setattr(
        kube_proxy, "measure", lambda *a, **k: SyncDelays(15.0, {"w": verdicts[-1]}, {"w": 1.0}, 2, 1.0)
    )
    fault = KubeProxySlowSync()
    plan = fault.plan(Node("cp", "control-plane"), SlowSyncParams())
    for verdict, healed in ((None, False), (True, False), (False, True)):  # undecided, slow, fast
        verdicts.append(verdict)
        kube = FakeKube(
            {
                "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy": ds,
                "/api/v1/namespaces/kube-system/pods/a": pod,
            }
        )
        # /configz would say the period is restored all along: the old check passed on it alone
        env = Env(kube, FakeNodeExec(FakeRunner(responder=lambda argv: Completed(argv, 0, '{"x": 1}'))), "chaoskit")
        assert fault.recovered(env, plan) is healed
        assert (kube.find(SERVICE_PATH) is None) is healed, "the probe is made for the measurement, deleted once fast"


def test_a_frozen_nodes_old_rules_never_pass_for_a_followed_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen in a catalog run: the rules still held the endpoint programmed before the freeze, and a check that picked
    that address again (free in the slice, which held the effect check's newer one) took the frozen node as
    recovered."""
    import chaoskit.faults.kube_proxy as kube_proxy

    monkeypatch.setattr(kube_proxy, "FOLLOW_S", 0.3)
    frozen_rules = "198.51.100.1\n"  # programmed before the freeze, and held since
    env = Env(
        FakeKube(),
        FakeNodeExec(
            FakeRunner(responder=lambda argv: Completed(argv, 0, frozen_rules) if "KUBE-SVC-" in argv[-1] else None)
        ),
        "chaoskit",
    )
    name = kube_proxy.rules_probe_name("w")
    for obj in probe_objects("198.51.100.2", name, "kube-proxy.freeze"):  # the effect check's change, never followed
        env.kube.apply(obj)
    fault = kube_proxy.KubeProxyFrozen()
    assert not fault.recovered(env, fault.plan(Node("w", "worker"), NoParams()))
