"""controller-manager.controller-stuck and controller-manager.quota-exhausted: their shell lines run against a copy of
the real manifest and a fake kubectl, and their effect checks fail when the injection did nothing."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from chaoskit.env import Env
from chaoskit.faults.control_plane import swap_static_pod
from chaoskit.faults.controller_manager.quota import QUOTA, QuotaExhausted, QuotaParams, quota_object
from chaoskit.faults.controller_manager.stuck import (
    CHANGED_AT,
    GONE_NAMESPACE,
    LEASE,
    LOST_NODE,
    MANIFEST,
    PROBE,
    SECOND_TARGET,
    STUCK,
    ControllerStuck,
    ControllerStuckParams,
    StuckName,
    probe_namespace,
    probe_object,
    queue_works,
)
from chaoskit.model.params import NoParams
from chaoskit.model.timeline import api_time
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.seams.scrape import Metrics
from chaoskit.seams.shell import Completed, FakeRunner

DATA = Path(__file__).parent / "data" / "evidence" / "controller-manager"
CP = "chaoskit-control-plane"
CP_NODE = Node(CP, "control-plane")


def ns(controller: str) -> str:
    return f"/api/v1/namespaces/{probe_namespace(controller)}"


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _run(tmp_path: Path, line: str) -> subprocess.CompletedProcess[str]:
    """A plan line on this host: /etc/kubernetes moved under tmp_path, kubectl a fake from tmp_path/bin."""
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "STATE": str(tmp_path / "state")}
    line = line.replace("/etc/kubernetes", str(tmp_path / "k"))
    return subprocess.run(["sh", "-c", line], capture_output=True, text=True, env=env, timeout=20)


def _kubectl(tmp_path: Path, body: str) -> None:
    path = tmp_path / "bin" / "kubectl"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


# The lease's holder: "old" on the first read, the new process's identity after that (kubelet restarted it). The
# lease itself (get -o json, then replace) is logged: swap_static_pod cuts the dead holder's duration.
NEW_LEADER = (
    'case "$*" in *jsonpath*) ;; *"-o json"*) echo \'{"leaseDurationSeconds": 15}\'; exit;; '
    '*replace*) cat >> "$STATE.replaced"; exit;; esac; '
    'n=$(cat "$STATE.reads" 2>/dev/null || echo 0); echo $((n+1)) > "$STATE.reads"; '
    '[ "$n" -eq 0 ] && echo old || echo cp_new'
)


@pytest.fixture
def node(tmp_path: Path) -> Path:
    """The control-plane node's /etc/kubernetes with kubeadm's kube-controller-manager manifest."""
    (tmp_path / "k" / "manifests").mkdir(parents=True)
    (tmp_path / "k" / "manifests" / "kube-controller-manager.yaml").write_text((DATA / "manifest.yaml").read_text())
    _kubectl(tmp_path, NEW_LEADER)
    return tmp_path


def command_of(manifest: Path) -> list[str]:
    lines = manifest.read_text().splitlines()
    start = lines.index("    - kube-controller-manager")
    return [line.strip()[2:] for line in lines[start:] if line.startswith("    - ")]


@pytest.mark.parametrize(
    ("controller", "flag"),
    [
        ("replicaset", "--concurrent-replicaset-syncs=0"),
        ("horizontalpodautoscaling", "--controllers=*,bootstrapsigner,tokencleaner,-horizontalpodautoscaling"),
        ("endpointslice", "--controllers=*,bootstrapsigner,tokencleaner,-endpointslice"),
    ],
)
def test_the_restart_edits_one_flag_into_the_manifest_and_the_revert_puts_the_original_back(
    node: Path, controller: StuckName, flag: str
) -> None:
    manifest = node / "k" / "manifests" / "kube-controller-manager.yaml"
    parked = node / "k" / "chaoskit-parked" / "kube-controller-manager.yaml"
    original = manifest.read_text()
    plan = ControllerStuck().plan(CP_NODE, ControllerStuckParams(controller=controller))
    for line in plan.apply[:2]:
        assert _run(node, line).returncode == 0, line
    assert parked.read_text() == original
    edited = command_of(manifest)
    assert flag in edited and len(edited) == len(command_of(parked)) + (controller == "replicaset")
    assert [f for f in edited if f.startswith("--controllers=")] == [
        flag if controller != "replicaset" else "--controllers=*,bootstrapsigner,tokencleaner"
    ]
    for _ in range(2):  # the dead-man switch may run after a manual revert
        assert _run(node, plan.revert[0]).returncode == 0
    assert manifest.read_text() == original and not parked.exists()


def test_without_a_controllers_flag_the_controller_is_left_out_of_the_default_set(node: Path) -> None:
    manifest = node / "k" / "manifests" / "kube-controller-manager.yaml"
    manifest.write_text(manifest.read_text().replace("    - --controllers=*,bootstrapsigner,tokencleaner\n", ""))
    line = STUCK["endpointslice"].edit(str(manifest), str(node / "edited"))
    assert _run(node, line).returncode == 0
    assert "--controllers=*,-endpointslice" in command_of(node / "edited")


def test_a_parked_original_is_never_overwritten(node: Path) -> None:
    parked = node / "k" / "chaoskit-parked" / "kube-controller-manager.yaml"
    parked.parent.mkdir()
    parked.write_text("the original, parked by a run that died")
    plan = ControllerStuck().plan(CP_NODE, ControllerStuckParams())
    assert _run(node, plan.apply[0]).returncode != 0
    assert parked.read_text() == "the original, parked by a run that died"


def test_the_restart_waits_for_the_new_process_to_lead_and_gives_up_on_an_unchanged_edit(node: Path) -> None:
    plan = ControllerStuck().plan(CP_NODE, ControllerStuckParams())
    assert _run(node, plan.apply[0]).returncode == 0
    assert _run(node, plan.apply[1]).returncode == 0
    assert int((node / "state.reads").read_text()) == 2  # the old holder, then a new one
    assert (node / "state.replaced").read_text().strip() == '{"leaseDurationSeconds": 1}'  # the dead holder's, cut
    (node / "k" / "chaoskit-parked" / "kube-controller-manager.yaml").write_text("no command here\n")
    assert _run(node, plan.apply[1]).returncode != 0  # nothing to edit: refused rather than restarting for nothing


def test_the_probe_of_each_controller_is_what_it_reconciles() -> None:
    assert probe_object("replicaset")["kind"] == "ReplicaSet"
    assert probe_object("replicaset")["spec"]["template"]["spec"]["schedulingGates"]
    assert probe_object("horizontalpodautoscaling")["spec"]["scaleTargetRef"]["name"] == f"{PROBE}-absent"
    assert probe_object("endpointslice")["kind"] == "Service"
    plan = ControllerStuck().plan(CP_NODE, NoParams())
    assert plan.params == ControllerStuckParams(controller="replicaset")
    assert "kubectl --kubeconfig=/etc/kubernetes/admin.conf delete replicaset" in plan.revert[1]


# --- effect and recovery, from the component's behaviour ---------------------------------------------------------


def _env(objects: dict[str, Any], healthz: str = "ok", metrics: str = "", hpa_sync: str = "") -> Env:
    def responder(argv: tuple[str, ...]) -> Completed | None:
        if argv[-2:] == ("cat", MANIFEST):  # the static pod's manifest: the HPA sync period it sets, if any
            period = f'    - "--horizontal-pod-autoscaler-sync-period={hpa_sync}"\n' if hpa_sync else ""
            return Completed(argv, 0, f"    - kube-controller-manager\n    - --leader-elect=true\n{period}")
        if any("10257/healthz" in a for a in argv):
            return Completed(argv, 0 if healthz else 7, healthz)
        if "10257/metrics" in argv[-1]:
            return Completed(argv, 0 if metrics else 7, metrics)
        return Completed(argv, 1, "")

    return Env(FakeKube(objects), FakeNodeExec(FakeRunner(responder=responder)), "chaoskit")


def _lease(renewed_ago: float) -> dict[str, Any]:
    return {
        "spec": {"holderIdentity": "cp_new", "renewTime": iso(time.time() - renewed_ago), "leaseDurationSeconds": 15}
    }


def _probe(controller: StuckName, age: float, **status: Any) -> dict[str, Any]:
    obj = probe_object(controller)
    obj["metadata"]["creationTimestamp"] = iso(time.time() - age)
    obj["metadata"]["generation"] = 1
    if controller == "namespace":  # deleted as soon as it was made
        obj["metadata"]["deletionTimestamp"] = obj["metadata"]["creationTimestamp"]
    if controller == "nodelifecycle":  # Ready, as the plan's status line leaves it: its one heartbeat then
        beat = obj["metadata"]["creationTimestamp"]
        status = {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": beat}], **status}
    return {**obj, "status": status}


PATHS = {
    "replicaset": f"/apis/apps/v1/namespaces/{probe_namespace('replicaset')}/replicasets/{PROBE}",
    "horizontalpodautoscaling": f"/apis/autoscaling/v2/namespaces/{probe_namespace('horizontalpodautoscaling')}"
    f"/horizontalpodautoscalers/{PROBE}",
    "endpointslice": f"{ns('endpointslice')}/services/{PROBE}",
    "serviceaccount": ns("serviceaccount"),  # the new namespace itself
    "namespace": f"/api/v1/namespaces/{GONE_NAMESPACE}",
    "nodelifecycle": f"/api/v1/nodes/{LOST_NODE}",
}
EMPTY_LISTS = {
    **{f"{ns(c)}/pods": {"items": []} for c in STUCK},
    **{f"/apis/discovery.k8s.io/v1/namespaces/{probe_namespace(c)}/endpointslices": {"items": []} for c in STUCK},
}


def stuck_env(controller: StuckName, age: float = 90, hpa_sync: str = "", **status: Any) -> Env:
    return _env(
        {PATHS[controller]: _probe(controller, age, **status), LEASE: _lease(2), **EMPTY_LISTS}, hpa_sync=hpa_sync
    )


def _effect(controller: StuckName, env: Env) -> bool:
    plan = ControllerStuck().plan(CP_NODE, ControllerStuckParams(controller=controller))
    return ControllerStuck().took_effect(env, plan)


@pytest.mark.parametrize("controller", list(STUCK))
def test_the_effect_is_a_probe_left_unreconciled_while_the_process_leads_and_is_healthy(controller: StuckName) -> None:
    assert _effect(controller, stuck_env(controller))


@pytest.mark.parametrize("controller", list(STUCK))
def test_no_effect_when_the_apply_lines_did_nothing(controller: StuckName) -> None:
    assert not _effect(controller, _env({LEASE: _lease(2), **EMPTY_LISTS}))  # no probe: nothing was applied


@pytest.mark.parametrize("controller", list(STUCK))
def test_no_effect_before_a_working_controller_would_have_reacted(controller: StuckName) -> None:
    assert not _effect(controller, stuck_env(controller, age=STUCK[controller].lag(_env({}), CP_NODE) - 3))


def test_an_hpa_counts_as_unreconciled_10s_past_the_sync_period_the_manifest_sets() -> None:
    hpa: StuckName = "horizontalpodautoscaling"
    assert STUCK[hpa].lag(_env({}), CP_NODE) == 25.0  # no flag: the stock 15 s period
    assert STUCK[hpa].lag(_env({}, hpa_sync="5s"), CP_NODE) == 15.0  # chaoskit's cluster
    assert STUCK[hpa].lag(_env({}, hpa_sync="1m0s"), CP_NODE) == 70.0
    assert STUCK[hpa].lag(_env({}, hpa_sync="soon"), CP_NODE) == 25.0  # unreadable: the stock period
    assert _effect(hpa, stuck_env(hpa, age=16, hpa_sync="5s"))
    assert not _effect(hpa, stuck_env(hpa, age=14, hpa_sync="5s"))
    assert not _effect(hpa, stuck_env(hpa, age=16))  # a stock controller may still be on its way
    assert STUCK["replicaset"].lag(_env({}, hpa_sync="5s"), CP_NODE) == 10.0


def test_no_effect_when_the_controller_does_its_work() -> None:
    assert not _effect("replicaset", stuck_env("replicaset", observedGeneration=1, replicas=1))
    pods = {f"{ns('replicaset')}/pods/p": {"metadata": {"name": "p", "labels": {"app": PROBE}}}}
    env = _env({PATHS["replicaset"]: _probe("replicaset", 60), LEASE: _lease(2), **pods})
    assert not _effect("replicaset", env)
    condition = {"type": "AbleToScale", "status": "False", "reason": "FailedGetScale"}
    condition["message"] = (
        f'the HPA controller was unable to get the target\'s current scale: "{PROBE}-absent" not found'
    )
    assert not _effect("horizontalpodautoscaling", stuck_env("horizontalpodautoscaling", conditions=[condition]))
    slices = {
        f"/apis/discovery.k8s.io/v1/namespaces/{probe_namespace('endpointslice')}/endpointslices/s": {
            "metadata": {"name": "s", "labels": {"kubernetes.io/service-name": PROBE}}
        }
    }
    env = _env({PATHS["endpointslice"]: _probe("endpointslice", 60), LEASE: _lease(2), **slices})
    assert not _effect("endpointslice", env)
    account = {f"{ns('serviceaccount')}/serviceaccounts/default": {"metadata": {"name": "default"}}}
    env = _env({PATHS["serviceaccount"]: _probe("serviceaccount", 60), LEASE: _lease(2), **account})
    assert not _effect("serviceaccount", env)
    assert not _effect("namespace", _env({LEASE: _lease(2)}))  # the deleted namespace is gone
    unknown = {"conditions": [{"type": "Ready", "status": "Unknown"}]}
    assert not _effect("nodelifecycle", stuck_env("nodelifecycle", **unknown))  # marked lost, as it should be


def test_no_effect_when_the_whole_process_is_down_or_frozen() -> None:
    env = _env({PATHS["replicaset"]: _probe("replicaset", 60), LEASE: _lease(40), **EMPTY_LISTS})
    assert not _effect("replicaset", env)  # lease stale: that is controller-manager.hung, not one controller
    env = _env({PATHS["replicaset"]: _probe("replicaset", 60), LEASE: _lease(2), **EMPTY_LISTS}, healthz="")
    assert not _effect("replicaset", env)


QUEUES = """# TYPE workqueue_depth gauge
workqueue_depth{{name="replicaset"}} {depth}
workqueue_work_duration_seconds_count{{name="replicaset"}} {done}
"""


def test_recovery_is_the_controller_taking_work_again() -> None:
    assert queue_works(Metrics.parse(QUEUES.format(depth=0, done=12)), "replicaset")
    assert queue_works(Metrics.parse(QUEUES.format(depth=0, done=0)), "replicaset")
    assert not queue_works(Metrics.parse(QUEUES.format(depth=1, done=0)), "replicaset")  # the stuck process
    assert not queue_works(Metrics.parse(QUEUES.format(depth=0, done=9)), "horizontalpodautoscaler")  # not started
    plan = ControllerStuck().plan(CP_NODE, ControllerStuckParams())
    assert ControllerStuck().recovered(_env({}, metrics=QUEUES.format(depth=0, done=5)), plan)
    assert not ControllerStuck().recovered(_env({}, metrics=QUEUES.format(depth=2, done=0)), plan)
    assert not ControllerStuck().recovered(_env({}, healthz="", metrics=QUEUES.format(depth=0, done=5)), plan)


# --- controller-manager.quota-exhausted ----------------------------------------------------------------------------

QNS = "/api/v1/namespaces/chaoskit-quota"


def _quota(made: float) -> dict[str, Any]:
    q = quota_object(QuotaParams())
    q["metadata"]["creationTimestamp"] = iso(made)
    return q


def _failed_create(message: str, at: float) -> dict[str, Any]:
    return {
        "reason": "FailedCreate",
        "message": message,
        "lastTimestamp": iso(at),
        "involvedObject": {"kind": "ReplicaSet", "name": "chaoskit-quota-probe"},
    }


REFUSED = (
    'Error creating: pods "chaoskit-quota-probe-x" is forbidden: exceeded quota: chaoskit-quota, '
    "requested: pods=1, used: pods=1, limited: pods=1"
)


def test_quota_plan_makes_the_quota_in_setup_above_demand_and_lowers_it_to_the_cap() -> None:
    plan = QuotaExhausted().plan(CP_NODE, QuotaParams(namespace="chaoskit-demo", pods=3, probe_replicas=0))
    assert '"hard":{"pods":"500"}' in plan.setup[1] and "chaoskit-demo" in plan.setup[1]
    assert "jsonpath={.status.hard.pods}" in plan.setup[2] and '= "500"' in plan.setup[2]
    assert '{"spec":{"hard":{"pods":"3"}}}' in plan.apply[0] and '= "3"' in plan.apply[1]
    assert len(plan.apply) == 2  # no probe: the workload's HPA does the asking
    assert plan.no_op().setup == plan.setup and plan.no_op().apply == ()  # the control keeps the quota, uncapped
    assert "-l chaoskit.dev/fault=controller-manager.quota-exhausted" in plan.revert[1]
    assert "chaoskit.dev/created-by=controller-manager.quota-exhausted" in plan.revert[2]
    assert len(QuotaExhausted().plan(CP_NODE, NoParams()).apply) == 3
    assert QuotaParams.model_validate({"probeReplicas": 0}).probe_replicas == 0


def test_quota_effect_is_a_refusal_naming_the_quota_after_it_was_made() -> None:
    plan = QuotaExhausted().plan(CP_NODE, QuotaParams())
    now = time.time()
    quota = {f"{QNS}/resourcequotas/{QUOTA}": _quota(now - 20)}

    def effect(*events: dict[str, Any]) -> bool:
        listed = {f"{QNS}/events/{i}": e for i, e in enumerate(events)} or {f"{QNS}/events": {"items": []}}
        objects = {**quota, **listed}
        return QuotaExhausted().took_effect(_env(objects), plan)

    assert effect(_failed_create(REFUSED, now - 5))
    assert not effect()  # the quota made, nothing refused yet
    assert not effect(_failed_create(REFUSED, now - 60))  # refused before this quota existed
    assert not effect(_failed_create(REFUSED.replace("chaoskit-quota,", "team-quota,"), now - 5))  # another quota
    assert not effect(_failed_create("Error creating: pods is forbidden: status unknown for quota", now - 5))
    assert not QuotaExhausted().took_effect(_env({f"{QNS}/events/0": _failed_create(REFUSED, now)}), plan)  # no-op


def test_quota_recovered_once_the_pods_it_refused_are_created_and_it_is_gone() -> None:
    plan = QuotaExhausted().plan(CP_NODE, QuotaParams())
    rs_path = "/apis/apps/v1/namespaces/chaoskit-quota/replicasets/chaoskit-quota-probe"

    def recovered(created: int | None, quota: bool = False) -> bool:
        objects: dict[str, Any] = {f"{QNS}/events/1": _failed_create(REFUSED, time.time() - 5)}
        if created is not None:  # the refused ReplicaSet, wanting 3 pods
            objects[rs_path] = {
                "metadata": {"name": "chaoskit-quota-probe"},
                "spec": {"replicas": 3},
                "status": {"replicas": created},
            }
        if quota:
            objects[f"{QNS}/resourcequotas/{QUOTA}"] = _quota(time.time())
        return QuotaExhausted().recovered(_env(objects), plan)

    assert not recovered(1), "a refused ReplicaSet still short of pods: its creations are still refused"
    assert recovered(3), "every refused pod created"
    assert recovered(None), "the refused ReplicaSet is gone: nothing of it waits"
    assert not recovered(3, quota=True), "the quota still there"
    assert not QuotaExhausted().recovered(
        _env({f"{QNS}/events": {"items": []}, f"{QNS}/resourcequotas/{QUOTA}": _quota(time.time())}), plan
    )


def test_api_times_are_what_the_checks_compare() -> None:
    assert api_time(iso(1796010840.0)) == 1796010840.0


def test_a_swap_removes_the_manifest_first_and_an_unchanged_one_restarts_nothing(tmp_path: Path) -> None:
    manifests, parked = tmp_path / "k" / "manifests", tmp_path / "k" / "parked"
    manifests.mkdir(parents=True)
    parked.mkdir()
    (manifests / "c.yaml").write_text("old")
    (parked / "c.yaml").write_text("old")
    _kubectl(tmp_path, 'echo "$*" >> "$STATE.calls"')
    line = swap_static_pod("c", str(manifests / "c.yaml"), str(parked / "c.yaml"), lease="c")
    assert _run(tmp_path, line).returncode == 0
    assert not (parked / "c.yaml").exists() and not (tmp_path / "state.calls").exists()  # same content: untouched
    (parked / "c.yaml").write_text("new")
    # kubelet's folder of the old pod never goes on this host: the wait ends at once, as no folder matches
    assert _run(tmp_path, line).returncode == 0
    assert (manifests / "c.yaml").read_text() == "new" and not (parked / "c.yaml").exists()
    assert "get lease c -o json" in (tmp_path / "state.calls").read_text()
    assert _run(tmp_path, line).returncode == 0  # again, as a dead-man switch after a manual revert: nothing left
    assert (manifests / "c.yaml").read_text() == "new"


def test_the_manifest_comes_back_while_the_api_server_is_down(node: Path) -> None:
    manifest = node / "k" / "manifests" / "kube-controller-manager.yaml"
    original = manifest.read_text()
    plan = ControllerStuck().plan(CP_NODE, ControllerStuckParams())
    for line in plan.apply[:2]:
        assert _run(node, line).returncode == 0, line
    _kubectl(node, "echo 'The connection to the server was refused' >&2; exit 1")
    assert _run(node, plan.revert[0]).returncode == 0  # the lease is only cut where the API answers
    assert manifest.read_text() == original


def test_the_node_lifecycle_probe_is_a_node_given_one_heartbeat_and_deleted_by_the_revert() -> None:
    plan = ControllerStuck().plan(CP_NODE, ControllerStuckParams(controller="nodelifecycle"))
    assert '"kind":"Node"' in plan.setup[-2] and "--subresource=status" in plan.setup[-1]
    assert "node.kubernetes.io/unreachable-" in plan.apply[-3] and "--subresource=status" in plan.apply[-1]
    assert any(f"delete node {LOST_NODE} --ignore-not-found" in line for line in plan.revert)
    gone = ControllerStuck().plan(CP_NODE, ControllerStuckParams(controller="namespace"))
    assert f"delete namespace {GONE_NAMESPACE}" in gone.apply[-1]


def test_a_quota_cap_is_compared_as_the_api_server_writes_it_back() -> None:
    from chaoskit.faults.controller_manager.quota import canonical

    assert [canonical(n) for n in (0, 2, 500, 1000, 1001)] == ["0", "2", "500", "1k", "1001"]
    plan = QuotaExhausted().plan(CP_NODE, QuotaParams(pods=1000))
    assert '"hard":{"pods":"1001"}' in plan.setup[1] and '= "1k"' in plan.apply[1]


# --- the probe is made in setup, reconciled by the working controller, then changed by the fault -------------------


@pytest.mark.parametrize("controller", list(STUCK))
def test_the_probe_is_made_in_setup_and_the_fault_only_changes_it(controller: StuckName) -> None:
    plan = ControllerStuck().plan(CP_NODE, ControllerStuckParams(controller=controller))
    made = probe_object(controller)
    assert any(f'"kind":"{made["kind"]}"' in line for line in plan.setup)
    assert not any(f'"kind":"{made["kind"]}"' in line for line in plan.apply)
    waits = [line for line in plan.setup if "did not reconcile" in line]
    assert len(waits) == (0 if controller in ("namespace", "nodelifecycle") else 1)
    assert plan.no_op().setup == plan.setup and plan.no_op().apply == ()


def test_a_controller_stuck_before_the_injection_is_seen_on_the_setups_probe() -> None:
    """The control can say yes: a ReplicaSet probe as setup makes it, never reconciled past the lag, is in effect
    (the engine then refuses to inject: the fault could not be told from the cluster's state)."""
    assert _effect("replicaset", stuck_env("replicaset", age=60))
    assert not _effect("replicaset", stuck_env("replicaset", age=60, observedGeneration=1))


def _changed(controller: StuckName, ago: float, generation: int, **status: Any) -> Env:
    probe = _probe(controller, 300, **status)
    probe["metadata"]["annotations"] = {CHANGED_AT: str(int(time.time() - ago))}
    probe["metadata"]["generation"] = generation
    if controller == "horizontalpodautoscaling":
        probe["spec"]["scaleTargetRef"]["name"] = SECOND_TARGET
    return _env({PATHS[controller]: probe, LEASE: _lease(2), **EMPTY_LISTS})


def test_the_lag_counts_from_the_faults_change_not_from_the_probes_making() -> None:
    assert not _effect("replicaset", _changed("replicaset", 3, 2, observedGeneration=1))  # just changed
    assert _effect("replicaset", _changed("replicaset", 20, 2, observedGeneration=1))  # generation 2 never observed
    assert not _effect("replicaset", _changed("replicaset", 20, 2, observedGeneration=2))
    old = {"type": "AbleToScale", "status": "False", "message": f'deployments.apps "{PROBE}-absent" not found'}
    new = {**old, "message": f'deployments.apps "{SECOND_TARGET}" not found'}
    hpa: StuckName = "horizontalpodautoscaling"
    assert _effect(hpa, _changed(hpa, 30, 2, conditions=[old]))  # still about the target it had
    assert not _effect(hpa, _changed(hpa, 30, 2, conditions=[new]))


@pytest.mark.parametrize("controller", list(STUCK))
def test_a_no_op_control_waits_past_when_the_check_could_say_yes(controller: StuckName) -> None:
    stuck = STUCK[controller]
    longest = stuck.lag(_env({}), CP_NODE) if not stuck.period_flag else stuck.lag_after + stuck.stock_period
    assert ControllerStuck().no_op_wait(ControllerStuckParams(controller=controller)) > longest
