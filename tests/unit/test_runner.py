"""Pure parts of the playbook runner: node resolution, dry-run plans, exit codes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest
from fake_faults import holds, run_one_step
from pydantic import BaseModel

from chaoskit import subject as subjects
from chaoskit.checks.base import Check, Outcome
from chaoskit.diagnosers.kit.base import ComponentReport, Diagnosis, Finding
from chaoskit.env import Env
from chaoskit.errors import ToolError, UsageError
from chaoskit.events import EffectObserved, Event, Reverted, Said
from chaoskit.faults.base import Fault, FaultPlan, Named
from chaoskit.journal import Journal
from chaoskit.measurements.base import Measurement, TargetParams
from chaoskit.model.playbook import Playbook
from chaoskit.model.record import EXIT_CODES, RunRecord
from chaoskit.model.timeline import MeasurementResult, Sample
from chaoskit.playbook import parse_playbook
from chaoskit.registry import CATALOG, Catalog, load_catalog
from chaoskit.run import during as during_module
from chaoskit.run.dry_run import cluster_changes, steps_shown
from chaoskit.run.during import Diagnostician
from chaoskit.run.plan import RunPlan, plan
from chaoskit.run.stage import Stage
from chaoskit.run.steps import StepRunner
from chaoskit.runner import Runner
from chaoskit.safety import Lock
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec, Node, pick
from chaoskit.seams.shell import Completed, FakeRunner

load_catalog()
NODES = [
    Node("chaoskit-control-plane", "control-plane"),
    Node("chaoskit-worker2", "worker"),
    Node("chaoskit-worker", "worker"),
]

PLAYBOOK = """\
apiVersion: chaoskit.dev/v1alpha1
kind: Playbook
metadata: {name: two-faults}
spec:
  steps:
    - fault: scheduler.down
      duration: 10s
    - concurrent:
        - fault: kube-proxy.freeze
          target: {node: chaoskit-worker2}
          duration: 5s
          deadline: 30s
        - fault: kubelet.stop
          target: {node: worker}
          duration: 5s
"""


def test_a_role_picks_the_first_node_of_that_role_by_name() -> None:
    assert pick(NODES, "worker", "control-plane").name == "chaoskit-worker"
    assert pick(NODES, None, "control-plane").name == "chaoskit-control-plane"
    assert pick(NODES, "any", "worker").name == "chaoskit-worker"
    assert pick(NODES, "chaoskit-worker2", "control-plane").name == "chaoskit-worker2"


def test_an_unknown_node_is_a_usage_error_listing_the_nodes() -> None:
    with pytest.raises(UsageError, match="chaoskit-worker2"):
        pick(NODES, "chaoskit-worker9", "worker")


def test_dry_run_plan_has_exact_nodes_commands_reverse_and_deadlines() -> None:
    steps = steps_shown(plan(parse_playbook(PLAYBOOK), NODES))
    assert [(s["step"], s["node"]) for s in steps] == [
        ("1-scheduler.down", "chaoskit-control-plane"),
        ("2.1-kube-proxy.freeze", "chaoskit-worker2"),
        ("2.2-kubelet.stop", "chaoskit-worker"),
    ]
    # unset: past the longer of the 10 s hold and scheduler.down's 60 s effect timeout, by 60 s; set: as given
    assert steps[0]["deadline_s"] == 120.0 and steps[1]["deadline_s"] == 30.0
    assert steps[2]["apply"] == ["systemctl stop kubelet"] and steps[2]["undo"] == ["systemctl start kubelet"]
    assert "systemctl is-active --quiet kubelet" in steps[2]["verify"][0]  # the dry run shows what proves the revert


def test_verdicts_map_to_the_documented_exit_codes() -> None:
    assert EXIT_CODES == {"passed": 0, "deviated": 1, "aborted": 4, "error": 4, "interrupted": 130}
    rec = RunRecord("p", "c", "ns", "j", "id", 0.0, verdict="deviated")
    assert rec.to_dict()["exit_code"] == 1


class FixedMeasurement(Measurement):
    """A measurement that 'saw' two scheduling delays: 1 s and 3 s."""

    Params = TargetParams

    name = "test_fixed_delays"

    def start(self) -> None:
        self.started = True

    def stop(self) -> MeasurementResult:
        r = MeasurementResult(self.label, self.name, 0.0)
        r.samples = [Sample(self.name, "scheduled", "scheduler", f"p{i}", 0.0, s, 0.001) for i, s in enumerate((1, 3))]
        return r


class NoopFault(Fault):
    """Breaks nothing."""

    name = "test.noop"
    component = "test"
    target_role = "worker"

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        return FaultPlan(
            self.name,
            node,
            apply=("echo applied",),
            undo=("echo reverted",),
            verify=("echo verified",),
            summary="nothing",
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return holds(env, plan)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return not holds(env, plan)


@pytest.fixture
def registered() -> Catalog:
    """The real catalog with the test fault and measurement, for one test only (the globals are left alone)."""
    return CATALOG.extended(faults=[("test.noop", NoopFault)], measurements=[("test_fixed_delays", FixedMeasurement)])


def _parse(catalog: Catalog, text: str) -> Playbook:
    return parse_playbook(text, faults=catalog.faults, checks=catalog.checks, measurements=catalog.measurements)


def _planned(catalog: Catalog, text: str) -> RunPlan:
    return plan(_parse(catalog, text), NODES, catalog)


MEASURED = """\
apiVersion: chaoskit.dev/v1alpha1
kind: Playbook
metadata: {name: measured}
spec:
  diagnose: false
  steps:
    - fault: test.noop
      duration: 100ms
  measurements:
    - {name: m, type: test_fixed_delays}
  thresholds:
    - {measurement: m, stat: max, stage: scheduled, max: %s}
"""


def _run(limit: str, tmp_path: Path, catalog: Catalog) -> RunRecord:
    env = Env(FakeKube(), FakeNodeExec(), "chaoskit")
    runner = Runner(env, NODES, Journal(tmp_path / "j.jsonl"), lambda _: None)
    return runner.run(_planned(catalog, MEASURED % limit))


def test_a_threshold_within_limits_passes_and_the_measurement_is_in_the_record(
    registered: Catalog, tmp_path: Path
) -> None:
    rec = _run("5s", tmp_path, registered)
    assert rec.verdict == "passed", rec.errors
    assert rec.measurements[0].summaries()["scheduled"].get("max") == 3
    assert rec.thresholds[0].breached is False


def test_a_breached_threshold_makes_the_run_deviate_with_exit_1(registered: Catalog, tmp_path: Path) -> None:
    rec = _run("2s", tmp_path, registered)
    assert rec.verdict == "deviated" and rec.exit_code == 1
    assert rec.thresholds[0].observed == 3 and "above 2s" in rec.thresholds[0].reason


class SlowToSettle(FixedMeasurement):
    """A measurement whose stop waits for pods on their way (here: for the steady state after to be checked)."""

    name = "test_slow_to_settle"
    settling, checked = threading.Event(), threading.Event()

    def stop(self) -> MeasurementResult:
        SlowToSettle.settling.set()
        SlowToSettle.checked.wait(5)
        return super().stop()


class SettlingSeen(Check):
    """Met; after the faults (its second run) it says whether a measurement was settling meanwhile."""

    name = "test_settling_seen"
    runs: ClassVar[int] = 0

    def run(self, env: Env, params: BaseModel) -> Outcome:
        SettlingSeen.runs += 1
        if SettlingSeen.runs == 1:
            return Outcome(True, "before")
        seen = SlowToSettle.settling.wait(3)
        SlowToSettle.checked.set()
        return Outcome(True, f"a measurement settling meanwhile: {seen}")


def test_measurements_settle_while_the_steady_state_after_is_checked(registered: Catalog, tmp_path: Path) -> None:
    SettlingSeen.runs = 0  # class state: a rerun in the same process starts over
    SlowToSettle.settling.clear()
    SlowToSettle.checked.clear()
    catalog = registered.extended(
        checks=[(SettlingSeen.name, SettlingSeen)], measurements=[(SlowToSettle.name, SlowToSettle)]
    )
    text = MEASURED.replace("test_fixed_delays", SlowToSettle.name) % "5s"
    text = text.replace("  steps:", "  steadyState:\n    - check: test_settling_seen\n  steps:")
    env = Env(FakeKube(), FakeNodeExec(), "chaoskit")
    rec = Runner(env, NODES, Journal(tmp_path / "j.jsonl"), lambda _: None).run(_planned(catalog, text))
    assert rec.verdict == "passed", rec.errors
    assert rec.after[0].detail == "a measurement settling meanwhile: True", "one waited for the other"


def test_dry_run_shows_a_handoff_before_the_apply_lines() -> None:
    pb = parse_playbook(
        "apiVersion: chaoskit.dev/v1alpha1\nkind: Playbook\nmetadata: {name: cert}\nspec:\n"
        "  steps:\n    - fault: kubelet.cert-expired\n      target: {node: worker}\n      duration: 10s\n",
        file="cert.yaml",
    )
    (step,) = steps_shown(plan(pb, NODES))
    assert step["node"] == "chaoskit-worker"
    assert list(step)[-4:] == ["handoffs", "apply", "undo", "verify"]
    assert step["handoffs"][0].startswith("on the first control-plane node: ")


SCALED = """\
apiVersion: chaoskit.dev/v1alpha1
kind: Playbook
metadata: {name: scaled}
spec:
  diagnose: false
  workload: {}
  steps:
    - fault: test.noop
      duration: 100ms
      scaleUp: {minReplicas: 3, at: %s}
"""
HPA_PATH = "/apis/autoscaling/v2/namespaces/chaoskit-scaled/horizontalpodautoscalers/web"


def _steps(runner: Runner) -> StepRunner:
    """The runner's steps as its run plays them, without a diagnosis."""
    return StepRunner(runner.env, runner.journal, runner.emit, runner.stop, runner.run_id, runner.peers, runner.stage)


@pytest.mark.parametrize("at", ["effect", "recovered"])
def test_a_step_s_scale_up_raises_the_hpa_s_min_replicas_when_it_says(
    at: str, registered: Catalog, tmp_path: Path
) -> None:
    kube = FakeKube({HPA_PATH: {"spec": {"minReplicas": 1, "maxReplicas": 6}}})
    seen: list[Event] = []
    runner = Runner(Env(kube, FakeNodeExec(), "chaoskit"), NODES, Journal(tmp_path / "j.jsonl"), seen.append)
    run = _planned(registered, SCALED % at)
    runner.stage.subject = subjects.chaoskits(run.namespace)  # what the stage's set-up makes of the workload
    rec = RunRecord(run.name, "chaoskit", run.namespace, "j", "id", 0.0)
    srec = _steps(runner).step(run.steps[0], rec)
    assert kube.objects[HPA_PATH]["spec"]["minReplicas"] == 3 and srec.scaled_up_at is not None
    asked = [e for e in seen if isinstance(e, Said) and "asked the HPA" in e.text]
    said = [e for e in seen if isinstance(e, EffectObserved | Reverted) or e in asked]
    # at the effect: before the revert; once recovered: after it
    assert asked and (said[1] is asked[0]) == (at == "effect"), said


def test_a_scale_up_that_cannot_reach_the_hpa_is_chaoskits_failure(registered: Catalog, tmp_path: Path) -> None:
    runner = Runner(Env(FakeKube(), FakeNodeExec(), "chaoskit"), NODES, Journal(tmp_path / "j.jsonl"), lambda _: None)
    run = _planned(registered, SCALED % "effect")
    runner.stage.subject = subjects.chaoskits(run.namespace)
    rec = RunRecord(run.name, "chaoskit", run.namespace, "j", "id", 0.0)
    srec = _steps(runner).step(run.steps[0], rec)
    assert srec.scaled_up_at is None and "could not raise the HPA's minReplicas to 3" in srec.failures[0]


class ReadyKube(FakeKube):
    """A Deployment is Ready as soon as it is applied."""

    def apply(self, obj: dict[str, Any]) -> Any:
        if obj["kind"] == "Deployment":
            obj = {**obj, "status": {"readyReplicas": obj["spec"]["replicas"]}}
        return super().apply(obj)


def routed_nodes(unsynced: int = 0, never: str = "") -> FakeNodeExec:
    """Nodes whose rules lead the web Service to a pod after `unsynced` reads each (`never`: that node's don't)."""
    reads: dict[str, int] = {}

    def answer(argv: tuple[str, ...]) -> Completed | None:
        if "KUBE-SEP" not in argv[-1]:  # not the read of a Service's endpoints
            return None
        reads[argv[0]] = reads.get(argv[0], 0) + 1
        synced = argv[0] != never and reads[argv[0]] > unsynced
        return Completed(argv, 0, "10.244.1.7\n" if synced else "")

    return FakeNodeExec(FakeRunner(responder=answer))


def test_the_workload_is_ready_only_once_every_nodes_rules_route_its_service(tmp_path: Path) -> None:
    said: list[Event] = []
    nodes = routed_nodes(unsynced=2, never="chaoskit-worker2")
    runner = Runner(Env(ReadyKube(), nodes, "chaoskit"), NODES, Journal(tmp_path / "j.jsonl"), said.append)
    runner.stage.routed_from_every_node("chaoskit-scaled", timeout=1.0)
    reads = [c[0] for c in nodes.calls if "KUBE-SEP" in c[-1]]
    assert reads.count("chaoskit-worker") == 3, "read until its kube-proxy synced the pod, then no more"
    assert reads.count("chaoskit-worker2") > 3, "read again until the deadline"
    assert [e.text for e in said if isinstance(e, Said)] == [
        "the web Service is not routed from chaoskit-worker2 after 1s; going on"
    ]


@pytest.mark.parametrize(("load", "generator"), [("{}", True), ("{concurrency: 0}", False)])
def test_a_load_of_no_loops_deploys_no_load_generator(
    load: str, generator: bool, registered: Catalog, tmp_path: Path
) -> None:
    kube = ReadyKube()
    runner = Runner(Env(kube, routed_nodes(), "chaoskit"), NODES, Journal(tmp_path / "j.jsonl"), lambda _: None)
    runner.stage.deploy(
        _planned(registered, SCALED.replace("workload: {}", f"workload: {{load: {load}}}") % "effect").stage
    )
    assert ("/apis/apps/v1/namespaces/chaoskit-scaled/deployments/load" in kube.objects) == generator
    assert "/apis/apps/v1/namespaces/chaoskit-scaled/deployments/web" in kube.objects


def test_a_component_another_run_holds_is_refused_before_anything_is_deployed(
    registered: Catalog, tmp_path: Path
) -> None:
    pb = _parse(registered, SCALED % "effect")
    lock = Lock(NoopFault().lock_name(Node("chaoskit-worker", "worker"), NoopFault.Params()), "another-host/run")
    lease = {
        "spec": {
            "holderIdentity": "another-host/run",
            "leaseDurationSeconds": 600,
            "renewTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
    }
    kube = FakeKube({lock.path: lease, HPA_PATH: {"spec": {"minReplicas": 1}}})
    env = Env(kube, FakeNodeExec(), "chaoskit")
    rec = Runner(env, NODES, Journal(tmp_path / "j.jsonl"), lambda _: None).run(plan(pb, NODES, registered))
    assert rec.verdict == "error" and "being broken by another run (another-host/run)" in rec.errors[0]
    assert [c for c in kube.calls if c[0] != "GET"] == [("DELETE", "/api/v1/namespaces/chaoskit-scaled")]  # cleanup


def test_dry_run_shows_a_step_s_scale_up_and_when_it_comes(registered: Catalog) -> None:
    (step,) = steps_shown(plan(_parse(registered, SCALED % "recovered"), NODES, registered))
    assert step["scale_up"] == (
        "at recovered: raise HPA chaoskit-scaled/web minReplicas to 3 (gone with the namespace after the run)"
    )
    assert "scale_up" not in steps_shown(plan(_parse(registered, PLAYBOOK), NODES, registered))[0]


SHOP = """\
apiVersion: chaoskit.dev/v1alpha1
kind: Playbook
metadata: {name: shop}
spec:
  diagnose: false
  subject: {namespace: shop, deployment: prices%s}
  steps:
    - fault: test.noop
      duration: 100ms
      scaleUp: {minReplicas: %d}
  measurements:
    - {name: m, type: test_fixed_delays}
"""
SHOP_HPA = "/apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers/prices"


def _shop_kube() -> FakeKube:
    return FakeKube(
        {
            "/apis/apps/v1/namespaces/shop/deployments/prices": {
                "metadata": {"name": "prices"},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "prices"}}},
            },
            SHOP_HPA: {
                "metadata": {"name": "prices"},
                "spec": {
                    "scaleTargetRef": {"kind": "Deployment", "name": "prices"},
                    "minReplicas": 2,
                    "maxReplicas": 6,
                },
                "status": {"conditions": [{"type": "AbleToScale", "status": "True"}]},
            },
            "/api/v1/namespaces/shop/services/prices": {
                "metadata": {"name": "prices"},
                "spec": {"selector": {"app": "prices"}, "ports": [{"port": 8080}]},
            },
        }
    )


def test_a_run_on_your_own_subject_raises_its_hpa_then_puts_it_back_and_touches_nothing_else(
    registered: Catalog, tmp_path: Path
) -> None:
    kube, journal, said = _shop_kube(), Journal(tmp_path / "j.jsonl"), list[Event]()
    started: list[Measurement] = []
    seen = type("Seen", (FixedMeasurement,), {"__doc__": "Seen started.", "start": lambda self: started.append(self)})
    catalog = CATALOG.extended(faults=[("test.noop", NoopFault)], measurements=[("test_fixed_delays", seen)])
    runner = Runner(Env(kube, FakeNodeExec(), "chaoskit"), NODES, journal, said.append)
    rec = runner.run(_planned(catalog, SHOP % ("", 4)))
    assert rec.verdict == "passed", rec.errors
    assert rec.subject == "Deployment shop/prices, HPA prices, Service prices"
    assert kube.objects[SHOP_HPA]["spec"]["minReplicas"] == 2  # put back
    assert [e.kind for e in journal.entries() if e.kind in ("changed", "restored")] == ["changed", "restored"]
    assert any("put back: HPA shop/prices minReplicas back to 2 (raised to 4)" in e.words() for e in said), said
    writes = [c for c in kube.calls if c[0] != "GET" and "/leases" not in c[1]]  # leases: chaoskit's locks
    assert writes == [("PATCH", SHOP_HPA), ("PATCH", SHOP_HPA)]  # nothing of the user's created or deleted
    params = started[0].params
    assert (started[0].namespace, params.kind, params.deployment, params.hpa, params.service) == (
        "shop",
        "Deployment",
        "prices",
        "prices",
        "prices",
    )


def test_a_scale_up_past_the_subjects_hpa_is_refused_before_anything_is_injected(
    registered: Catalog, tmp_path: Path
) -> None:
    kube = _shop_kube()
    runner = Runner(Env(kube, FakeNodeExec(), "chaoskit"), NODES, Journal(tmp_path / "j.jsonl"), lambda _: None)
    rec = runner.run(_planned(registered, SHOP % ("", 7)))
    assert rec.verdict == "error" and "at most its maxReplicas (6)" in rec.errors[0] and rec.steps == []
    assert kube.objects[SHOP_HPA]["spec"]["minReplicas"] == 2


def test_a_scale_up_the_subject_has_already_reached_is_refused_before_anything_is_injected(
    registered: Catalog, tmp_path: Path
) -> None:
    kube = _shop_kube()
    kube.objects["/apis/apps/v1/namespaces/shop/deployments/prices"]["spec"]["replicas"] = 4
    runner = Runner(Env(kube, FakeNodeExec(), "chaoskit"), NODES, Journal(tmp_path / "j.jsonl"), lambda _: None)
    rec = runner.run(_planned(registered, SHOP % ("", 4)))
    assert rec.verdict == "error" and "runs 4 replicas already, so nothing would scale up" in rec.errors[0]


def test_dry_run_says_a_subjects_hpa_is_put_back(registered: Catalog) -> None:
    text = SHOP.replace("  measurements:\n    - {name: m, type: test_fixed_delays}\n", "") % (", hpa: prices", 3)
    (step,) = steps_shown(plan(_parse(registered, text), NODES, registered))
    assert (
        step["scale_up"] == "at effect: raise HPA shop/prices minReplicas to 3 (its minReplicas put back after "
        "the run, or by chaoskit revert)"
    )


PROBED = """\
apiVersion: chaoskit.dev/v1alpha1
kind: Playbook
metadata: {name: probed}
spec:
  diagnose: false
  probes:
    - name: shop-ok
      command: {argv: [sh, -c, check-the-shop]}
      every: 20ms
      when: [before, during, after, effect]
  steps:
    - fault: test.noop
      duration: 300ms
"""


def _probed_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: Callable[[], bool], catalog: Catalog
) -> RunRecord:
    from chaoskit.probes import run as probes_run

    monkeypatch.setattr(probes_run, "MIN_PHASE_S", 0.2)  # a unit test's phases: a few samples, not seconds
    shell = FakeRunner(responder=lambda argv: Completed(argv, 1 if fails() else 0, "", "shop down"))
    runner = Runner(
        Env(FakeKube(), FakeNodeExec(), "chaoskit"),
        NODES,
        Journal(tmp_path / "j.jsonl"),
        lambda _: None,
        shell=shell,
    )
    return runner.run(_planned(catalog, PROBED))


def test_a_probe_that_holds_is_judged_in_every_phase_and_its_samples_kept(
    registered: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _probed_run(tmp_path, monkeypatch, lambda: False, registered)
    assert rec.verdict == "passed", rec.errors
    (probe,) = rec.probes
    assert [(p.phase, p.ok) for p in probe.phases] == [
        ("before", True),
        ("during", True),
        ("after", True),
        ("effect", True),
    ]
    assert all(p.samples >= 1 for p in probe.phases) and len(probe.samples) >= 10


def test_a_probe_failing_before_the_faults_aborts_the_run_with_nothing_injected(
    registered: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _probed_run(tmp_path, monkeypatch, lambda: True, registered)
    assert rec.verdict == "aborted" and rec.steps == [] and rec.exit_code == 4
    assert "probe shop-ok: " in rec.errors[0] and "exit 1: shop down" in rec.errors[0]


class CauseFirst(Fault):
    """Its cause is named at once; its symptom (the effect) shows `effect_after` seconds after the injection."""

    name = "test.cause-first"
    component = "test"
    target_role = "worker"
    named = Named("test", "broken on purpose")
    effect_timeout = 1.5
    effect_after: ClassVar[float] = 1.0

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        self.injected = time.monotonic()
        return FaultPlan(
            self.name,
            node,
            apply=("echo applied",),
            undo=("echo reverted",),
            verify=("echo verified",),
            summary="a cause before its symptom",
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return holds(env, plan) and time.monotonic() - self.injected >= self.effect_after

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return not holds(env, plan)


def _naming(when: str) -> Diagnosis:
    time.sleep(0.8)  # one look takes its time: before, it began only once the effect was seen
    finding = Finding("critical", "test", "test is broken on purpose", "a test")
    return Diagnosis("chaoskit", (ComponentReport("test", "chaoskit-worker", "failed", (finding,), ()),), 0.0, 0.8)


@pytest.mark.parametrize("effect_after", [0.5, 1.5, 99.0])
def test_the_diagnosis_looks_beside_a_slow_effect_check_from_its_early_look_and_only_while_the_fault_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, effect_after: float
) -> None:
    monkeypatch.setattr(during_module, "EARLY_LOOK_S", 1.0)
    monkeypatch.setattr(CauseFirst, "effect_after", effect_after)
    # no effect: the revert comes at 1.3 s, while the early look (from 1 s, for 0.8 s) is under way
    monkeypatch.setattr(CauseFirst, "effect_timeout", 2.5 if effect_after < 99 else 1.3)
    monkeypatch.setattr(Diagnostician, "look", lambda self, when: _naming(when))
    rec = run_one_step(tmp_path, CauseFirst, NODES)
    (step,) = rec.steps
    during = [d for d in rec.diagnoses if d["when"] == "during"]
    if effect_after == 99:  # a look that ends after the revert began is not "during" the fault: nothing recorded
        assert step.effect_s is None and step.named_s is None and during == [], (step, during)
        assert not [t for t in threading.enumerate() if t.name.startswith("chaoskit-diagnose")]
        return
    assert step.effect_s is not None and step.named_s is not None and len(during) == 1
    assert during[0]["looks"][-1]["named"] and during[0]["looks"][-1]["after_s"] == round(step.named_s, 1)
    if effect_after < 1.0:  # an effect sooner than the early look: the look starts at the effect, as it always did
        assert step.effect_s + 0.7 < step.named_s < step.effect_s + 1.2, (step.effect_s, step.named_s)
        return
    # the early look (1 s) named it at 1.8 s, beside the effect check: the hold is the longer of the two, not the sum
    assert step.named_s < step.effect_s + 0.5 and step.held_s < step.effect_s + 0.6, (step.named_s, step.held_s)


def test_simulated_nodes_come_before_the_run_and_go_back_to_the_count_found_after(
    registered: Catalog, tmp_path: Path
) -> None:
    found = {"metadata": {"name": "kwok-node-0", "labels": {"type": "kwok"}}}
    env = Env(FakeKube({"/api/v1/nodes": {"items": [found]}}), FakeNodeExec(), "chaoskit")
    asked: list[int] = []
    runner = Runner(env, NODES, Journal(tmp_path / "j.jsonl"), lambda _: None, simulate=asked.append)
    text = (MEASURED % "5s").replace("  diagnose: false", "  diagnose: false\n  simulatedNodes: 100")
    rec = runner.run(_planned(registered, text))
    assert rec.verdict == "passed", rec.errors
    assert asked == [100, 1], "made before the steps, then the one found before put back"


def test_dry_run_says_what_the_run_changes_in_the_whole_cluster_and_that_it_is_put_back(registered: Catalog) -> None:
    text = (MEASURED % "5s").replace(
        "  diagnose: false", "  diagnose: false\n  simulatedNodes: 3\n  kubeProxyMode: nftables"
    )
    said = cluster_changes(_planned(registered, text).changes)
    assert (
        said["simulatedNodes"].startswith("3 simulated nodes (kwok-node-0..2") and "put back" in said["simulatedNodes"]
    )
    assert "nftables" in said["kubeProxyMode"] and "put back" in said["kubeProxyMode"]
    assert cluster_changes(_planned(registered, MEASURED % "5s").changes) == {}


def test_a_verdict_is_the_gravest_any_phase_found() -> None:
    rec = RunRecord("p", "c", "ns", "j", "id", 0.0)
    rec.settle("deviated")
    rec.settle("passed")
    assert rec.verdict == "deviated"
    rec.settle("error")
    rec.settle("deviated")
    assert rec.verdict == "error" and rec.exit_code == 4
    rec.settle("interrupted")
    rec.settle("error")  # a put-back failing after Ctrl-C: still the user's interruption, 130
    assert rec.verdict == "interrupted" and rec.exit_code == 130


def test_an_interrupted_run_stays_interrupted_when_what_it_changed_cannot_be_put_back(
    registered: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import chaoskit.run.stage as stage

    def away(kube: object, journal: object) -> list[str]:
        raise ToolError("the API server does not answer")

    monkeypatch.setattr(stage.subjects, "put_back", away)
    env = Env(FakeKube(), FakeNodeExec(), "chaoskit")
    runner = Runner(env, NODES, Journal(tmp_path / "j.jsonl"), lambda _: None)
    runner.stop.set()  # Ctrl-C before the first step
    rec = runner.run(_planned(registered, MEASURED % "5s"))
    assert rec.verdict == "interrupted" and rec.exit_code == 130, rec.errors
    assert any("could not put back what the run changed" in e for e in rec.errors)


def test_a_scale_up_waits_for_the_hpas_own_able_to_scale_and_says_when_it_never_comes(tmp_path: Path) -> None:
    kube, said = _shop_kube(), []
    env = Env(kube=kube, nodes=FakeNodeExec(), cluster="c")
    stage = Stage(env, Journal(tmp_path / "j.jsonl"), said.append)
    stage.subject = subjects.Subject("shop", "Deployment", "prices", {"app": "prices"}, "prices", "prices")
    stage.able_to_scale(timeout=0.1)
    assert said == []  # able at once: nothing to say
    kube.objects[SHOP_HPA]["status"] = {"conditions": [{"type": "AbleToScale", "status": "False"}]}
    stage.able_to_scale(timeout=0.1)
    assert [e.words() for e in said] == ["HPA prices not AbleToScale after 0.1s; going on, its scale-up may lag"]
