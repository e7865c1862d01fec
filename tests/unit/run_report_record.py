"""A realistic run record for the run report's tests: scheduler.down held while an HPA scaled up, its pods waiting
for the scheduler until the revert."""

from __future__ import annotations

from pathlib import Path

from chaoskit.diagnosers.kit.base import ComponentReport, Diagnosis, Evidence, Finding
from chaoskit.model.record import CheckRecord, ProbeRecord, RunRecord, StepRecord
from chaoskit.model.slo import PhaseResult, ProbeSample
from chaoskit.model.thresholds import ThresholdResult
from chaoskit.model.timeline import MeasurementResult, Sample

T = 1796588130.0  # 2026-12-06T20:15:30Z
PODS = ("web-7d9f8c-2xk4q", "web-7d9f8c-9bq7n", "web-7d9f8c-tl5zw")


def _scale_up() -> MeasurementResult:
    m = MeasurementResult("scale-up", "hpa_scale_up", T + 1.0, T + 40.0)
    a = T + 7.4
    m.samples += [
        Sample("hpa_scale_up", "hpa_decision", "controller-manager", "scale-up", a, a + 0.83, 0.0404796600341796),
        Sample("hpa_scale_up", "replicaset_scaled", "controller-manager", "scale-up", a + 0.83, a + 0.88, 0.0405),
    ]
    for i, pod in enumerate(PODS):
        created = a + 0.98 + 0.05 * i
        bound = T + 25.3 + 0.2 * i  # the scheduler back 3.1 s after the revert at T + 22
        started, ready = bound + 1.4, bound + 3.4
        m.samples += [
            Sample("hpa_scale_up", "pod_created", "controller-manager", pod, created - 0.1, created, 1.0),
            Sample("hpa_scale_up", "scheduled", "scheduler", pod, created, bound, 1.0),
            Sample("hpa_scale_up", "containers_started", "kubelet", pod, bound, started, 1.0),
            Sample("hpa_scale_up", "ready", "kubelet", pod, started, ready, 1.0),
            Sample("hpa_scale_up", "endpoint_ready", "controller-manager", pod, ready, ready + 0.31, 0.04),
            Sample(
                "hpa_scale_up",
                "rules_programmed",
                "kube-proxy",
                f"{pod}@chaoskit-worker",
                ready + 0.31,
                ready + 0.7,
                0.25,
            ),
        ]
    return m


def scheduler_down(fault: str = "scheduler.down", home: Path | None = None) -> RunRecord:
    journal = (home or Path.home()) / ".local/state/chaoskit/journals/scheduler-down-2026-12-06T201530Z.jsonl"
    rec = RunRecord("scheduler-down", "chaoskit", "chaoskit-sched", str(journal), "7f3a9c21", T, T + 48.2)
    rec.verdict = "deviated"
    rec.before = [CheckRecord("cluster-healthy", True, "3 nodes Ready", 0.42)]
    step = StepRecord("1-" + fault, fault, "chaoskit-control-plane", "its manifest moved away", 2.1, 17.0, 3.1)
    step.named_s, step.injected_at, step.reverted_at = 4.04047966003417969, T + 5.0, T + 22.0
    rec.steps = [step]
    rec.measurements = [_scale_up()]
    rec.thresholds = [ThresholdResult("scale-up", "max", "total", None, 20.0, 26.1, True, "above 20s")]
    finding = Finding(
        "critical", "scheduler", "kube-scheduler is not running", "its manifest is gone", (Evidence("p", "crictl ps"),)
    )
    diagnosis = Diagnosis("chaoskit", (ComponentReport("scheduler", "cp", "failed", (finding,), ()),), T + 9.0, 2.3)
    rec.diagnoses = [
        {"when": "during", "fault": fault, "node": "cp", "named_s": step.named_s, "report": diagnosis.to_dict()}
    ]
    phases = [PhaseResult("during", True, 34, 0, "success 100.0% of 34")]
    rec.probes = [
        ProbeRecord("storefront", "http", 1.0, phases, [ProbeSample(T + k, True, 0.012, "HTTP 200") for k in range(40)])
    ]
    rec.probe_windows = {
        "before": [T, T + 5.0],
        "during": [[T + 5.0, T + 22.0]],
        "after": [T + 22.0, T + 45.0],
        "effects": [T + 7.1],
    }
    return rec
