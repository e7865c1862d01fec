"""HPA-to-Ready measured on the real cluster: every stage of a scale-up shows, each owned by its component, and a
fault moves the time into the stage of the component it breaks (and nowhere else)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaoskit import workloads
from chaoskit.cluster.kube import Kube
from chaoskit.cluster.nodeexec import DockerNodeExec
from chaoskit.cluster.shell import SubprocessRunner
from chaoskit.engine import FaultResult, run_fault
from chaoskit.faults.apiserver import ApiServerDown
from chaoskit.faults.base import Env, Fault, NoParams
from chaoskit.faults.controller_manager import ControllerManagerHung
from chaoskit.faults.scheduler import SchedulerDown
from chaoskit.journal import Journal
from chaoskit.measurements.base import TargetParams
from chaoskit.measurements.hpa_scale_up import HpaScaleUp, MissingPiece
from chaoskit.measurements.probe import INTERVAL
from chaoskit.model.timeline import HPA_STAGES, MeasurementResult, Sample
from tests.e2e.test_faults import wait_healthy


@pytest.fixture
def env(kube: Kube, cluster: str) -> Env:
    env = Env(kube, DockerNodeExec(SubprocessRunner()), cluster)
    wait_healthy(env)
    return env


@pytest.fixture
def web(env: Env, ns: str) -> Iterator[str]:
    """The web Deployment with its Service and an HPA (1..6) at rest: one Ready pod, the HPA settled."""
    for obj in (workloads.web_deployment(ns), workloads.service(ns), workloads.hpa(ns, max_replicas=6)):
        env.kube.apply(obj)
    hpa = f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/web"
    env.kube.wait("the HPA to settle", lambda: env.kube.get(hpa).get("status", {}).get("desiredReplicas") == 1, 90)
    yield ns


def _raise_min_replicas(env: Env, ns: str, replicas: int) -> float:
    env.kube.patch(f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/web",
                   {"spec": {"minReplicas": replicas}})  # fmt: skip
    return time.time()


def _stage(result: MeasurementResult, stage: str) -> list[Sample]:
    return [s for s in result.samples if s.stage == stage]


def _in_background(
    env: Env, fault: Fault, node: str, stop: threading.Event, tmp_path: Path
) -> tuple[threading.Thread, list[FaultResult]]:
    out: list[FaultResult] = []
    thread = threading.Thread(target=lambda: out.append(run_fault(
        env, fault, node, NoParams(), duration=300, journal=Journal(tmp_path / "j.jsonl"), stop=stop)))  # fmt: skip
    thread.start()
    return thread, out


def test_a_scale_up_shows_every_stage_with_its_owner_and_precision(env: Env, web: str) -> None:
    m = HpaScaleUp(env, TargetParams(), "baseline", web)
    m.start()
    _raise_min_replicas(env, web, 4)
    env.kube.wait("three new pods", lambda: len(m.tracker.pods) >= 3, 90)
    result = m.stop()
    pods = {s.subject for s in _stage(result, "ready")}
    assert len(pods) == 3, result.notes
    for stage in HPA_STAGES:
        samples = _stage(result, stage.name)
        assert samples, f"no {stage.name} sample: {result.notes}"
        assert {s.component for s in samples} == {stage.component}
    nodes = {s.subject.split("@")[1] for s in _stage(result, "rules_programmed")}
    assert nodes == {f"{env.cluster}-control-plane", f"{env.cluster}-worker", f"{env.cluster}-worker2"}
    assert all(s.precision == 0.001 for s in _stage(result, "scheduled"))
    # the dataplane stages carry the brackets measured by the probe's two loops, each wider than their pause between
    # rounds; the rules' two reads stay under 1.5 s on a busy host, a request round up to curl's 1 s and the next round
    rules, first = _stage(result, "rules_programmed"), _stage(result, "first_request")
    assert all(INTERVAL < s.precision < 1.5 for s in rules), [round(s.precision, 3) for s in rules]
    assert all(INTERVAL < s.precision < 2.5 for s in first), [round(s.precision, 3) for s in first]
    assert len({s.precision for s in rules + first}) > 1, "one precision for every sample: a constant, not measured"
    for s in result.samples:  # a 0 is either measured or named in the notes
        assert s.end > s.start or any(n.startswith(f"{s.stage} of {s.subject} ") for n in result.notes), s
    summaries = result.summaries()
    assert summaries["scheduled"].max is not None and summaries["scheduled"].max < 5
    assert summaries["total"].p99 is None and "p99 needs at least 100 samples" in " ".join(summaries["total"].notes)
    assert result.gaps == []
    print("\n" + "\n".join(f"{k}: p50 {v.p50} max {v.max:.3f} precision median {v.precision_median:.3f} max "
                            f"{v.precision:.3f}" for k, v in summaries.items() if v.max is not None))  # fmt: skip
    print("\n".join(result.notes))


def test_scheduler_down_for_20s_lands_in_the_scheduling_stage(env: Env, web: str, tmp_path: Path) -> None:
    m = HpaScaleUp(env, TargetParams(), "scheduler-down", web)
    m.start()
    stop = threading.Event()
    thread, out = _in_background(env, SchedulerDown(), f"{env.cluster}-control-plane", stop, tmp_path)
    try:
        env.kube.wait(
            "the scheduler to be down",
            lambda: SchedulerDown().took_effect(env, SchedulerDown().plan(f"{env.cluster}-control-plane", NoParams())),
            60,
        )
        _raise_min_replicas(env, web, 3)
        env.kube.wait("the new pods to exist", lambda: len(m.tracker.pods) >= 2, 60)
        created = max(p.created.at for p in m.tracker.pods.values())
        time.sleep(max(0.0, created + 20 - time.time()))
    finally:
        stop.set()
        thread.join()
    assert out and out[0].effect_s is not None and out[0].recovery_s is not None, out and out[0].errors
    result = m.stop()
    scheduled = _stage(result, "scheduled")
    assert len(scheduled) == 2, result.notes
    for s in scheduled:
        assert 20 <= s.seconds <= 32, f"{s.subject} scheduled after {s.seconds:.1f}s"
    for other in ("pod_created", "containers_started", "endpoint_ready"):
        assert max(s.seconds for s in _stage(result, other)) < 8, other
    print(f"\nscheduled stage: {[round(s.seconds, 1) for s in scheduled]}")


def test_a_hung_controller_manager_stops_the_path_at_the_hpa_until_it_resumes(
    env: Env, web: str, tmp_path: Path
) -> None:
    m = HpaScaleUp(env, TargetParams(), "cm-hung", web)
    m.start()
    stop = threading.Event()
    node = f"{env.cluster}-control-plane"
    thread, out = _in_background(env, ControllerManagerHung(), node, stop, tmp_path)
    try:
        env.kube.wait(
            "the controller manager to freeze",
            lambda: ControllerManagerHung().took_effect(env, ControllerManagerHung().plan(node, NoParams())),
            60,
        )
        raised = _raise_min_replicas(env, web, 3)
        time.sleep(20)
        assert m.tracker.scale_ups == [] and m.tracker.pods == {}, "no progress past the HPA while it is hung"
        resumed = time.time()
    finally:
        stop.set()
        thread.join()
    assert out and out[0].effect_s is not None and out[0].recovery_s is not None, out and out[0].errors
    env.kube.wait("two new pods", lambda: len(m.tracker.pods) >= 2, 90)
    result = m.stop()
    decision = _stage(result, "hpa_decision")
    assert len(decision) == 1 and decision[0].end >= resumed - 1, result.notes
    assert decision[0].start == pytest.approx(raised, abs=1.0) and decision[0].seconds >= 19
    assert len(_stage(result, "ready")) == 2
    print(f"\nhpa_decision stage under a hung controller manager: {decision[0].seconds:.1f}s")


def test_a_missing_hpa_is_named(env: Env, ns: str) -> None:
    env.kube.apply(workloads.web_deployment(ns))
    with pytest.raises(MissingPiece, match="no HPA"):
        HpaScaleUp(env, TargetParams(), "x", ns).start()


def test_an_api_server_restart_mid_measurement_is_a_marked_gap_and_the_watches_resume(
    env: Env, web: str, tmp_path: Path
) -> None:
    m = HpaScaleUp(env, TargetParams(), "api-restart", web)
    m.start()
    outage = run_fault(env, ApiServerDown(), f"{env.cluster}-control-plane", NoParams(), duration=10,
                       journal=Journal(tmp_path / "j.jsonl"))  # fmt: skip
    assert outage.ok, outage.errors
    _raise_min_replicas(env, web, 3)
    env.kube.wait("two new pods", lambda: len(m.tracker.pods) >= 2, 120)
    result = m.stop()
    assert result.gaps, "the outage must be marked, not skipped"
    assert all(g.end > g.start for g in result.gaps) and any("broke" in g.reason for g in result.gaps)
    assert len(_stage(result, "ready")) == 2, result.notes  # the watches came back and saw the scale-up
    print(f"\ngaps: {[(round(g.end - g.start, 1), g.reason[:60]) for g in result.gaps]}")
