"""The record of a playbook run: its steady-state checks, steps, measurements, thresholds, diagnoses, probes and
verdict, as the JSON record, the reports, JUnit, the exporter and the operator read it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from chaoskit.errors import EXIT_BREACHED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TOOL
from chaoskit.model.score import run_score

Verdict = Literal["passed", "deviated", "aborted", "error", "interrupted"]
EXIT_CODES: dict[Verdict, int] = {
    "passed": EXIT_OK,
    "deviated": EXIT_BREACHED,
    "aborted": EXIT_TOOL,
    "error": EXIT_TOOL,
    "interrupted": EXIT_INTERRUPTED,
}


@dataclass
class CheckRecord:
    check: str
    ok: bool
    detail: str
    seconds: float


@dataclass
class StepRecord:
    step: str
    fault: str
    node: str
    summary: str = ""
    effect_s: float | None = None
    held_s: float = 0.0
    recovery_s: float | None = None
    named_s: float | None = None  # injected -> the diagnosis names the fault's component and cause (when diagnosing)
    scaled_up_at: float | None = None  # when the step's scaleUp raised the HPA's minReplicas (wall clock)
    errors: list[str] = field(default_factory=list)  # the system deviated
    failures: list[str] = field(default_factory=list)  # chaoskit could not arm, inject or revert
    weight: float = 1.0  # in the resilience score
    fact_check: dict[str, Any] = field(default_factory=dict)  # FactCheck.to_dict(): each check asked where it says no

    @property
    def ok(self) -> bool:
        return not self.errors and not self.failures and self.effect_s is not None and self.recovery_s is not None


@dataclass
class RunRecord:
    playbook: str
    cluster: str
    namespace: str
    journal: str
    run_id: str
    started_at: float
    finished_at: float = 0.0
    before: list[CheckRecord] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    after: list[CheckRecord] = field(default_factory=list)
    measurements: list[dict[str, Any]] = field(default_factory=list)  # MeasurementResult.to_dict()
    thresholds: list[dict[str, Any]] = field(default_factory=list)  # each threshold with its observed value
    diagnoses: list[dict[str, Any]] = field(default_factory=list)  # {"when": before|during|after, "report": ...}
    subject: str = ""  # the user's objects under test, in words (empty: chaoskit's workload or none)
    probes: list[dict[str, Any]] = field(default_factory=list)  # ProbeRecord.to_dict(): phases judged, samples
    probe_windows: dict[str, Any] = field(default_factory=dict)  # the phases' time windows the probes were judged by
    verdict: Verdict = "passed"
    errors: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        data = {**asdict(self), "exit_code": self.exit_code}
        return {**data, "score": run_score(data)}
