"""A suite of playbooks: what may overlap, in what order they start, the worst verdict, JUnit and the HTML page."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml

from chaoskit.checks.cluster import ClusterHealthy, NodeChecks
from chaoskit.diagnosers.kit.base import ComponentReport, Diagnosis, Finding
from chaoskit.env import Env
from chaoskit.faults.base import Fault
from chaoskit.journal import Journal
from chaoskit.model.record import CheckRecord, ProbeRecord, RunRecord, StepRecord
from chaoskit.model.thresholds import ThresholdResult
from chaoskit.playbook import parse_playbook
from chaoskit.registry import FAULTS, load_catalog
from chaoskit.reports.run_html import render_run_html
from chaoskit.reports.run_junit import render_run_junit
from chaoskit.run.during import names_fault
from chaoskit.run.peers import Peers
from chaoskit.run.plan import plan
from chaoskit.runner import Runner
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.suite import Planned, SuiteEntry, SuiteRecord, order, run_suite, startable

load_catalog()
NODES = [
    Node("chaoskit-control-plane", "control-plane"),
    Node("chaoskit-worker", "worker"),
    Node("chaoskit-worker2", "worker"),
]


def playbook(name: str, fault: str, node: str = "", params: str = "") -> Planned:
    target = f"\n      target: {{node: {node}}}" if node else ""
    text = (
        f"apiVersion: chaoskit.dev/v1alpha1\nkind: Playbook\nmetadata: {{name: {name}}}\nspec:\n  steps:\n"
        f"    - fault: {fault}{target}\n      duration: 10s{params}\n"
    )
    return Planned.of(Path(f"{name}.yaml"), plan(parse_playbook(text, file=f"{name}.yaml"), NODES))


def test_node_faults_meet_only_on_the_same_node_and_cluster_faults_meet_everything() -> None:
    stop_w1 = playbook("stop-w1", "kubelet.stop", "worker")
    freeze_w2 = playbook("freeze-w2", "kube-proxy.freeze", "chaoskit-worker2")
    flush_w1 = playbook("flush-w1", "kube-proxy.freeze", "worker")
    quota = playbook("quota", "controller-manager.quota-exhausted", params="\n      params: {namespace: q}")
    sched = playbook("sched", "scheduler.down")
    runtime_w2 = playbook("runtime-w2", "kubelet.runtime-unresponsive", "chaoskit-worker2")
    assert not stop_w1.meets(runtime_w2) and stop_w1.meets(flush_w1) and not flush_w1.meets(freeze_w2)
    assert stop_w1.meets(freeze_w2), "a node going NotReady moves endpoints every kube-proxy programs"
    assert not quota.meets(stop_w1) and not quota.meets(freeze_w2)
    assert sched.alone and all(sched.meets(p) for p in (stop_w1, freeze_w2, quota))
    assert quota.radius_words() == "namespace q" and stop_w1.nodes == {"chaoskit-worker"}


def test_a_playbook_timing_every_nodes_dataplane_meets_every_kubelet_and_kube_proxy_fault() -> None:
    measured = "\n  measurements:\n    - {name: up, type: hpa_scale_up}"
    webhook = "apiserver.admission-webhook-failing"
    timed = playbook("timed", webhook, params="\n      params: {namespace: a}" + measured)
    untimed = playbook("untimed", webhook, params="\n      params: {namespace: b}")
    freeze_w2 = playbook("freeze-w2", "kube-proxy.freeze", "chaoskit-worker2")
    stop_w1 = playbook("stop-w1", "kubelet.stop", "worker")
    assert timed.every_node == {"kubelet", "kube-proxy"} and not timed.alone
    assert timed.meets(freeze_w2) and freeze_w2.meets(timed) and timed.meets(stop_w1), "its rules_programmed on w2"
    assert not untimed.meets(freeze_w2) and not untimed.meets(stop_w1), "a namespace fault alone stays there"
    assert not timed.meets(untimed), "two namespaces' faults still overlap"


def test_pods_nothing_can_place_stay_in_their_namespace_but_a_tainted_node_reaches_every_playbook() -> None:
    unplaceable = playbook("cpu", "scheduler.unschedulable", params="\n      params: {reason: resources}")
    assert unplaceable.radius_words() == "namespace chaoskit-faults" and not unplaceable.meets(
        playbook("stop-w1", "kubelet.stop", "worker")
    )
    assert playbook("taint", "scheduler.unschedulable", params="\n      params: {reason: taint}").alone


def test_slow_sync_and_a_proxy_mode_switch_run_alone_and_flushed_rules_stay_on_their_node() -> None:
    assert playbook("slow", "kube-proxy.slow-sync").alone
    flush = playbook("flush", "kube-proxy.flush-rules", "worker")  # kept flushed: endpoint churn elsewhere is fine
    assert not flush.alone and flush.nodes == {"chaoskit-worker"}
    assert not flush.meets(playbook("kp-w2", "kube-proxy.freeze", "chaoskit-worker2"))
    text = (
        "apiVersion: chaoskit.dev/v1alpha1\nkind: Playbook\nmetadata: {name: nft}\nspec:\n"
        "  kubeProxyMode: nftables\n  steps:\n    - fault: kube-proxy.freeze\n      duration: 5s\n"
    )
    assert Planned.of(Path("nft.yaml"), plan(parse_playbook(text), NODES)).alone


def test_a_playbook_with_simulated_nodes_runs_alone_they_load_the_whole_control_plane() -> None:
    text = (
        "apiVersion: chaoskit.dev/v1alpha1\nkind: Playbook\nmetadata: {name: big}\nspec:\n"
        "  simulatedNodes: 100\n  steps:\n    - fault: kube-proxy.freeze\n      duration: 5s\n"
    )
    assert Planned.of(Path("big.yaml"), plan(parse_playbook(text), NODES)).alone


def test_overlapping_playbooks_go_first_and_what_runs_alone_waits_for_an_empty_cluster() -> None:
    sched = playbook("sched", "scheduler.down")
    stop_w1 = playbook("stop-w1", "kubelet.stop", "worker")
    flush_w1 = playbook("flush-w1", "kube-proxy.freeze", "worker")
    freeze_w2 = playbook("freeze-w2", "kubelet.runtime-unresponsive", "chaoskit-worker2")
    api = playbook("api", "apiserver.down")
    queue = order([api, sched, stop_w1, flush_w1, freeze_w2])
    # the API server's outage makes the scheduler exit: scheduler-down must not recover under its back-off
    assert [p.plan.name for p in queue] == ["stop-w1", "flush-w1", "freeze-w2", "sched", "api"]
    queue = queue[:-1]
    assert startable(queue, [], parallel=4) == [stop_w1, freeze_w2]  # flush-w1 meets stop-w1
    assert startable(queue, [], parallel=1) == [stop_w1]
    frozen_proxy_w2 = playbook("kp-w2", "kube-proxy.freeze", "chaoskit-worker2")
    assert startable([flush_w1, sched], [frozen_proxy_w2], parallel=4) == [flush_w1]
    assert startable([sched], [frozen_proxy_w2], parallel=4) == []  # alone: only on an empty cluster
    assert startable([sched, flush_w1], [], parallel=4) == [sched]  # nothing jumps ahead of what runs alone
    # leaked watches leave the API server answering: only what takes it away goes after every other cluster fault
    leak, etcd = playbook("leak", "apiserver.watch-leak"), playbook("etcd", "apiserver.etcd-timeout")
    cert = playbook("cert", "apiserver.cert-expired")
    assert [p.plan.name for p in order([api, cert, etcd, leak, sched])] == ["leak", "sched", "api", "cert", "etcd"]


class _StubRunner(Runner):
    """A run that takes `seconds` and ends with a given verdict; it notes what ran at the same time."""

    def __init__(self, verdict: str, seconds: float, log: list[tuple[str, float, float]], peers: Peers) -> None:
        super().__init__(
            Env(FakeKube(), FakeNodeExec(), "chaoskit"), NODES, Journal(Path("/dev/null")), lambda _: None, peers
        )
        self.verdict, self.seconds, self.log = verdict, seconds, log
        self.thread: int | None = None  # the run's thread, once it runs

    def run(self, pb: object) -> RunRecord:
        t0, self.thread = time.monotonic(), threading.get_ident()
        self.stop.wait(self.seconds)
        self.log.append((getattr(pb, "name", ""), t0, time.monotonic()))
        rec = RunRecord(getattr(pb, "name", ""), "chaoskit", "ns", "j", self.run_id, 0.0)
        rec.verdict = "interrupted" if self.stop.is_set() else self.verdict  # type: ignore[assignment]
        return rec


def test_a_suite_overlaps_what_may_and_its_verdict_is_the_worst_one() -> None:
    planned = [
        playbook("stop-w1", "kubelet.stop", "worker"),
        playbook("freeze-w2", "kubelet.runtime-unresponsive", "chaoskit-worker2"),
        playbook("sched", "scheduler.down"),
    ]
    verdicts = {"stop-w1": "passed", "freeze-w2": "deviated", "sched": "passed"}
    log: list[tuple[str, float, float]] = []
    suite = run_suite(
        "s",
        "chaoskit",
        planned,
        lambda p, peers: _StubRunner(verdicts[p.plan.name], 0.2, log, peers),
        parallel=3,
        say=lambda _: None,
    )
    spans = {name: (a, b) for name, a, b in log}
    assert spans["freeze-w2"][0] < spans["stop-w1"][1]  # the two node faults overlapped
    assert spans["sched"][0] >= max(spans["stop-w1"][1], spans["freeze-w2"][1])  # the scheduler's ran alone, after
    assert suite.verdict == "deviated" and suite.exit_code == 1
    data = suite.to_dict()
    assert [r["playbook"] for r in data["runs"]] == ["stop-w1", "freeze-w2", "sched"] or len(data["runs"]) == 3
    assert data["exit_code"] == 1 and all("radius" in r for r in data["runs"])


def test_a_run_that_chaoskit_could_not_do_outranks_a_deviation() -> None:
    planned = [playbook("a", "kubelet.stop", "worker"), playbook("b", "kube-proxy.freeze", "chaoskit-worker2")]
    planned[1] = playbook("b", "kubelet.runtime-unresponsive", "chaoskit-worker2")
    verdicts = {"a": "error", "b": "deviated"}
    suite = run_suite(
        "s",
        "chaoskit",
        planned,
        lambda p, peers: _StubRunner(verdicts[p.plan.name], 0, [], peers),
        parallel=2,
        say=lambda _: None,
    )
    assert suite.verdict == "error" and suite.exit_code == 4


def test_ctrl_c_stops_every_run_and_the_suite_is_interrupted() -> None:
    planned = [playbook("a", "kubelet.stop", "worker"), playbook("b", "kube-proxy.freeze", "chaoskit-worker2")]
    planned[1] = playbook("b", "kubelet.runtime-unresponsive", "chaoskit-worker2")
    runners: list[_StubRunner] = []

    def make(p: Planned, peers: Peers) -> Runner:
        runners.append(_StubRunner("passed", 30, [], peers))
        return runners[-1]

    # a real Ctrl-C wakes the main thread; Python's own handler, since a background job starts with SIGINT ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        suite = run_suite("s", "chaoskit", planned, make, parallel=2, say=lambda _: None)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert suite.interrupted and suite.exit_code == 130
    assert all(r.stop.is_set() for r in runners) and len(suite.runs) == 2


def test_a_ctrl_c_the_kernel_hands_to_a_runs_thread_still_stops_the_suite_at_once() -> None:
    # Linux may deliver a process's SIGINT to any thread; Python then only flags the main thread
    planned = [playbook("a", "kubelet.stop", "worker")]
    runners: list[_StubRunner] = []

    def make(p: Planned, peers: Peers) -> Runner:
        runners.append(_StubRunner("passed", 30, [], peers))
        return runners[-1]

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    def to_the_run() -> None:
        while not runners or runners[0].thread is None:
            time.sleep(0.01)
        signal.pthread_kill(runners[0].thread, signal.SIGINT)

    threading.Thread(target=to_the_run, daemon=True).start()
    t0 = time.monotonic()
    try:
        suite = run_suite("s", "chaoskit", planned, make, parallel=2, say=lambda _: None)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert suite.interrupted and time.monotonic() - t0 < 5, "the run held its fault on, as if no Ctrl-C had come"


def _report(component: str, subject: str, title: str, severity: str = "critical") -> ComponentReport:
    finding = Finding(severity, component, title, "cause")  # type: ignore[arg-type]
    return ComponentReport(component, subject, "failed", (finding,), ())


def test_a_fault_is_named_past_the_findings_another_held_fault_explains() -> None:
    runtime: Fault = FAULTS.get("kubelet.runtime-unresponsive")()  # type: ignore[assignment]
    freeze: Fault = FAULTS.get("kube-proxy.freeze")()  # type: ignore[assignment]
    found = Diagnosis(
        "c",
        (
            _report("containerd", "chaoskit-worker2", "containerd does not answer the kubelet's runtime calls"),
            _report("kube-proxy", "chaoskit-worker", "kube-proxy on chaoskit-worker is not synced", "warning"),
        ),
        0.0,
        1.0,
    )
    # the runtime's critical finding outranks kube-proxy's warning, until the runtime's node is set aside
    assert not names_fault(found, freeze, "chaoskit-worker", [])
    assert names_fault(found, freeze, "chaoskit-worker", [(runtime, "chaoskit-worker2")])
    assert names_fault(found, runtime, "chaoskit-worker2", [(freeze, "chaoskit-worker")])


def test_steady_state_leaves_out_the_nodes_another_run_breaks() -> None:
    nodes = {
        f"/api/v1/nodes/{n}": {
            "metadata": {"name": n},
            "status": {"conditions": [{"type": "Ready", "status": "False" if n == "chaoskit-worker2" else "True"}]},
        }
        for n in ("a", "chaoskit-worker2")
    }
    pods = {
        f"/api/v1/namespaces/kube-system/pods/{n}": {
            "metadata": {"name": n},
            "spec": {"nodeName": n},
            "status": {"conditions": [{"type": "Ready", "status": "False" if n == "chaoskit-worker2" else "True"}]},
        }
        for n in ("a", "chaoskit-worker2")
    }
    env = Env(FakeKube({**nodes, **pods}, raw_paths={"/readyz": "ok"}), FakeNodeExec(), "c")
    assert not ClusterHealthy().run(env, NodeChecks()).ok
    excused = ClusterHealthy().run(env, NodeChecks.model_validate({"exceptNodes": ["chaoskit-worker2"]}))
    assert excused.ok and "not judged: chaoskit-worker2" in excused.detail


def test_every_fault_says_how_the_diagnosis_names_it_and_where_it_reaches() -> None:
    for name in FAULTS.names():
        fault: Fault = FAULTS.get(name)()  # type: ignore[assignment]
        assert getattr(fault, "named", None) is not None, f"{name}: declare `named = Named(component, cause)`"
        assert fault.scope in ("cluster", "node", "namespace"), name


def test_leases_are_per_node_for_node_faults_and_per_namespace_for_a_quota() -> None:
    stop: Fault = FAULTS.get("kubelet.stop")()  # type: ignore[assignment]
    quota: Fault = FAULTS.get("controller-manager.quota-exhausted")()  # type: ignore[assignment]
    sched: Fault = FAULTS.get("scheduler.down")()  # type: ignore[assignment]
    assert stop.lock_name(Node("chaoskit-worker2", "worker"), stop.Params()) == "kubelet-chaoskit-worker2"
    assert (
        quota.lock_name(Node("cp", "control-plane"), quota.Params.model_validate({"namespace": "shop"}))
        == "controller-manager-shop"
    )
    assert sched.lock_name(Node("cp", "control-plane"), sched.Params()) == "scheduler"


def _suite_record() -> SuiteRecord:
    ok = RunRecord("kubelet-stop", "chaoskit", "ns", "j.jsonl", "r1", 0.0, finished_at=80.0)
    ok.before = [CheckRecord("cluster-healthy", True, "3 nodes Ready", 0.1)]
    ok.steps = [
        StepRecord(
            "1-kubelet.stop", "kubelet.stop", "chaoskit-worker2", "kubelet stopped", 50.2, 60.0, 3.1, named_s=1.5
        )
    ]
    bad = RunRecord("scheduler-down", "chaoskit", "ns", "j2.jsonl", "r2", 80.0, finished_at=200.0, verdict="deviated")
    bad.steps = [
        StepRecord(
            "1-scheduler.down",
            "scheduler.down",
            "cp",
            "stopped",
            None,
            60.0,
            2.0,
            errors=["no effect of scheduler.down observed within 60s"],
        )
    ]
    bad.thresholds = [
        ThresholdResult.from_dict(
            {
                "measurement": "scale-up",
                "stat": "max",
                "stage": "total",
                "min": None,
                "max": 120.0,
                "observed": 130.0,
                "breached": True,
                "reason": "max of total is 130.000s, above 120s",
            }
        )
    ]
    bad.errors = []
    suite = SuiteRecord("playbooks", "chaoskit", 0.0, 3, finished_at=200.0)
    suite.runs = [
        SuiteEntry("a.yaml", "node chaoskit-worker2", 0.0, 80.0, ok),
        SuiteEntry("b.yaml", "cluster", 80.0, 200.0, bad),
    ]
    return suite


def test_junit_has_a_suite_per_playbook_and_a_case_per_check_step_and_threshold(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(render_run_junit(_suite_record()))
    suites = {s.name: s for s in JUnitXml.fromfile(str(path))}
    assert set(suites) == {"kubelet-stop", "scheduler-down"}
    cases = {c.name: c for c in suites["scheduler-down"]}
    step = cases["step 1-scheduler.down: scheduler.down on cp"]
    assert isinstance(step.result[0], Failure) and "no effect" in step.result[0].message
    threshold = cases["threshold scale-up: max of total ≤ 120s"]
    assert isinstance(threshold.result[0], Failure) and "above 120s" in threshold.result[0].message
    assert all(not c.result for c in suites["kubelet-stop"])


def test_chaoskits_own_failure_is_a_junit_error_not_a_failure(tmp_path: Path) -> None:
    rec = RunRecord("p", "c", "ns", "j", "r", 0.0, verdict="error")
    rec.steps = [StepRecord("1-x", "kubelet.stop", "n", failures=["could not arm the dead-man switch"])]
    path = tmp_path / "j.xml"
    path.write_text(render_run_junit(rec))
    (case,) = [c for s in JUnitXml.fromfile(str(path)) for c in s if c.name.startswith("step")]
    assert isinstance(case.result[0], Error) and "dead-man" in case.result[0].message


def test_the_html_page_shows_every_playbook_when_it_ran_and_thresholds_in_words() -> None:
    page = render_run_html(_suite_record())
    for text in (
        "kubelet-stop",
        "scheduler-down",
        "deviated",
        "scale-up: max of total ≤ 120s",
        "<svg",
        "no effect of scheduler.down",
    ):
        assert text in page, text
    assert "{'measurement'" not in page  # never a raw dict


@pytest.mark.parametrize("record", [_suite_record().runs[0].record])
def test_one_run_renders_on_its_own(record: RunRecord) -> None:
    assert "kubelet-stop" in render_run_html(record) and "<testsuite" in render_run_junit(record)


def test_an_equally_severe_finding_nothing_explains_does_not_hide_the_fault_but_a_more_severe_one_does() -> None:
    quota: Fault = FAULTS.get("controller-manager.quota-exhausted")()  # type: ignore[assignment]
    refused = _report("workloads", "cp", "ResourceQuota chaoskit-quota in ns refuses pods: exceeded quota", "warning")
    slow_etcd = _report("etcd", "cp", "etcd's disk is slow", "warning")
    etcd_down = _report("etcd", "cp", "etcd is not running", "critical")
    assert names_fault(Diagnosis("c", (slow_etcd, refused), 0.0, 1.0), quota, "cp", [])
    assert not names_fault(Diagnosis("c", (etcd_down, refused), 0.0, 1.0), quota, "cp", [])


def test_junit_has_a_case_per_judged_probe_phase_and_the_score_as_a_property(tmp_path: Path) -> None:
    rec = RunRecord("shop", "chaoskit", "ns", "j", "r", 0.0, verdict="deviated")
    rec.steps = [StepRecord("1-kube-proxy.freeze", "kube-proxy.freeze", "w", "frozen", 1.0, 20.0, 0.2)]
    rec.probes = [
        ProbeRecord.from_dict(
            {
                "name": "storefront",
                "kind": "http",
                "weight": 1.0,
                "ok": False,
                "samples": [],
                "phases": [
                    {"phase": "before", "ok": True, "samples": 20, "reason": "success 100.0% of 20"},
                    {"phase": "during", "ok": False, "samples": 80, "reason": "success 90.0% < 99% (8 of 80 failed)"},
                ],
            }
        )
    ]
    path = tmp_path / "j.xml"
    path.write_text(render_run_junit(rec))
    (suite,) = JUnitXml.fromfile(str(path))
    cases = {c.name: c for c in suite}
    assert not cases["probe storefront before"].result
    assert isinstance(cases["probe storefront during"].result[0], Failure)
    assert {p.name: p.value for p in suite.properties()} == {"resilience_score": "75"}  # (1 + 0.5) / 2


def test_runs_holding_faults_share_a_diagnosis_started_after_their_fault_and_never_wait_for_an_older_one() -> None:
    peers, collected = Peers(), []
    gate = threading.Event()

    def collect() -> Diagnosis:
        gate.wait(5)
        found = Diagnosis("chaoskit", (), time.time(), 0.1)
        collected.append(found)
        return found

    asked = time.monotonic()
    got: list[tuple[float, Diagnosis | None, bool]] = []
    askers = [threading.Thread(target=lambda: got.append(peers.diagnosis(asked, collect))) for _ in range(3)]
    for t in askers:
        t.start()
    time.sleep(0.2)
    # a fault that took effect after that diagnosis started does not wait for it: it collects its own at once
    later: list[tuple[float, Diagnosis | None, bool]] = []
    own = threading.Thread(target=lambda: later.append(peers.diagnosis(time.monotonic(), collect)))
    own.start()
    time.sleep(0.2)
    assert not got and not later  # both under way, side by side
    gate.set()
    for t in [*askers, own]:
        t.join(5)
    assert len(collected) == 2 and [mine for _, _, mine in got].count(True) == 1 and later[0][2]
    assert len({id(found) for _, found, _ in got}) == 1 and later[0][1] is not got[0][1]
    # the newest finished one serves whoever's fault took effect before it started
    assert peers.diagnosis(asked, collect)[1] is later[0][1] and len(collected) == 2
    # one that failed serves nothing newer: the next caller collects
    failed = peers.diagnosis(later[0][0], lambda: None)
    assert failed[1] is None and failed[2]
    assert peers.diagnosis(failed[0], collect)[2] and len(collected) == 3
