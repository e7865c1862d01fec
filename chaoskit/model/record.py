"""The record of a playbook run: its steady-state checks, steps, measurements, thresholds, diagnoses, probes and
verdict. The JSON record, the reports, JUnit, the exporter and the operator all read it through these types (a
record read back from JSON goes through `RunRecord.from_dict` once); `held` is the one rule for a step.

Diagnoses, a step's fact check and the probes' phase windows stay in their JSON form here: each is a report with a
type of its own where it is made (diagnosers.kit.base.Diagnosis, model.factcheck.FactCheck, model.slo.Phases).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from chaoskit.errors import EXIT_BREACHED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TOOL
from chaoskit.figures import seconds
from chaoskit.model.factcheck import FactCheck
from chaoskit.model.moments import RUN_SCHEMA, epoch, rfc3339, rfc3339_or_none
from chaoskit.model.score import run_score
from chaoskit.model.slo import PhaseResult, ProbeSample
from chaoskit.model.thresholds import ThresholdResult
from chaoskit.model.timeline import MeasurementResult

Verdict = Literal["passed", "deviated", "aborted", "error", "interrupted"]
EXIT_CODES: dict[Verdict, int] = {
    "passed": EXIT_OK,
    "deviated": EXIT_BREACHED,
    "aborted": EXIT_TOOL,
    "error": EXIT_TOOL,
    "interrupted": EXIT_INTERRUPTED,
}
GRAVITY: tuple[Verdict, ...] = ("passed", "deviated", "aborted", "error", "interrupted")  # least to most grave
Data = Mapping[str, Any]


def held(effect_s: float | None, recovery_s: float | None, errors: Sequence[str], failures: Sequence[str]) -> bool:
    """A fault step held: its effect was seen, its component was healthy again after the revert, and nothing deviated
    or failed on the way. The score, the reports, JUnit, the exporter, the operator and `inject` judge by it."""
    return effect_s is not None and recovery_s is not None and not errors and not failures


@dataclass
class CheckRecord:
    check: str
    ok: bool
    detail: str
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "ok": self.ok, "detail": self.detail, "seconds": self.seconds}

    @classmethod
    def from_dict(cls, data: Data) -> CheckRecord:
        return cls(str(data["check"]), bool(data["ok"]), str(data.get("detail", "")), float(data.get("seconds") or 0))


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class PlayedStep(Protocol):
    """What a step's record reads of the step as it was planned (a resolved step: its fault on its node)."""

    @property
    def name(self) -> str: ...
    @property
    def fault(self) -> _Named: ...
    @property
    def node(self) -> _Named: ...
    @property
    def weight(self) -> float: ...


class StepOutcome(Protocol):
    """What a step's record reads of what the engine saw of the step (its fault's result)."""

    @property
    def summary(self) -> str: ...
    @property
    def effect_s(self) -> float | None: ...
    @property
    def held_s(self) -> float: ...
    @property
    def stopped_holding_s(self) -> float | None: ...
    @property
    def recovery_s(self) -> float | None: ...
    @property
    def errors(self) -> Sequence[str]: ...
    @property
    def failures(self) -> Sequence[str]: ...
    @property
    def fact_check(self) -> FactCheck: ...


@dataclass
class StepRecord:
    step: str
    fault: str
    node: str
    summary: str = ""
    effect_s: float | None = None
    held_s: float = 0.0  # as observed: up to when the hold's watch saw the fault stop holding
    recovery_s: float | None = None
    named_s: float | None = None  # injected -> the diagnosis names the fault's component and cause (when diagnosing)
    scaled_up_at: float | None = None  # when the step's scaleUp raised the HPA's minReplicas (wall clock)
    errors: list[str] = field(default_factory=list)  # the system deviated
    failures: list[str] = field(default_factory=list)  # chaoskit could not arm, inject or revert
    weight: float = 1.0  # in the resilience score
    fact_check: dict[str, Any] = field(default_factory=dict)  # FactCheck.to_dict(): each check asked where it says no
    stopped_holding_s: float | None = None  # injected -> its effect check said no during the hold
    injected_at: float | None = None  # wall clock: where the report puts the fault on the run's timelines
    reverted_at: float | None = None  # wall clock: when its revert began

    @classmethod
    def of(
        cls, step: PlayedStep, result: StepOutcome | None = None, while_held: StepRecord | None = None
    ) -> StepRecord:
        """A step's record: the step as planned, what the engine saw of it (no result: the record its hold writes
        into), and what its hold wrote into `while_held` (its scale-up, its naming; their errors after the engine's)."""
        rec = cls(step.name, step.fault.name, step.node.name, weight=step.weight)
        if while_held is not None:
            rec.named_s, rec.scaled_up_at = while_held.named_s, while_held.scaled_up_at
            rec.injected_at, rec.reverted_at = while_held.injected_at, while_held.reverted_at
            rec.errors, rec.failures = list(while_held.errors), list(while_held.failures)
        if result is not None:
            rec.summary, rec.effect_s, rec.held_s = result.summary, result.effect_s, result.held_s
            rec.stopped_holding_s, rec.recovery_s = result.stopped_holding_s, result.recovery_s
            rec.fact_check = result.fact_check.to_dict()
            rec.errors, rec.failures = [*result.errors, *rec.errors], [*result.failures, *rec.failures]
        return rec

    @property
    def held(self) -> bool:
        return held(self.effect_s, self.recovery_s, self.errors, self.failures)

    @property
    def held_words(self) -> str:
        """The hold as observed: its seconds, and when the fault stopped holding before the revert."""
        held = seconds(self.held_s)
        return held if self.stopped_holding_s is None else f"{held} (then stopped holding)"

    @property
    def missing(self) -> list[str]:
        """What the system did not do, when chaoskit did its part: why a step that failed nothing did not hold."""
        if self.failures:
            return []
        seen = (("no effect seen", self.effect_s), ("no recovery", self.recovery_s))
        return [what for what, seconds in seen if seconds is None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "fault": self.fault,
            "node": self.node,
            "summary": self.summary,
            "effect_s": self.effect_s,
            "held_s": self.held_s,
            "stopped_holding_s": self.stopped_holding_s,
            "recovery_s": self.recovery_s,
            "named_s": self.named_s,
            "scaled_up_at": rfc3339_or_none(self.scaled_up_at),
            "injected_at": rfc3339_or_none(self.injected_at),
            "reverted_at": rfc3339_or_none(self.reverted_at),
            "errors": list(self.errors),
            "failures": list(self.failures),
            "weight": self.weight,
            "fact_check": dict(self.fact_check),
        }

    @classmethod
    def from_dict(cls, data: Data) -> StepRecord:
        return cls(
            step=str(data.get("step") or ""),
            fault=str(data.get("fault") or ""),
            node=str(data.get("node") or ""),
            summary=str(data.get("summary") or ""),
            effect_s=_seconds(data.get("effect_s")),
            held_s=_seconds(data.get("held_s")) or 0.0,
            stopped_holding_s=_seconds(data.get("stopped_holding_s")),
            recovery_s=_seconds(data.get("recovery_s")),
            named_s=_seconds(data.get("named_s")),
            scaled_up_at=epoch(data.get("scaled_up_at")),
            injected_at=epoch(data.get("injected_at")),
            reverted_at=epoch(data.get("reverted_at")),
            errors=[str(e) for e in data.get("errors") or []],
            failures=[str(f) for f in data.get("failures") or []],
            weight=float(data.get("weight", 1.0)),
            fact_check=dict(data.get("fact_check") or {}),
        )


@dataclass
class ProbeRecord:
    """A probe through a run: each phase it judged, and its samples."""

    name: str
    kind: str
    weight: float
    phases: list[PhaseResult]
    samples: list[ProbeSample]

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.phases)

    @property
    def held_share(self) -> float:
        """The share of its judged phases that held (0 when it judged none)."""
        return sum(1 for p in self.phases if p.ok) / len(self.phases) if self.phases else 0.0

    def failed_phases(self) -> list[PhaseResult]:
        return [p for p in self.phases if not p.ok]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "weight": self.weight,
            "ok": self.ok,
            "phases": [p.to_dict() for p in self.phases],
            "samples": [[rfc3339(s.at), s.ok, s.value, s.detail] for s in self.samples],
        }

    @classmethod
    def from_dict(cls, data: Data) -> ProbeRecord:
        return cls(
            name=str(data.get("name") or ""),
            kind=str(data.get("kind") or ""),
            weight=float(data.get("weight", 1.0)),
            phases=[_phase(p) for p in data.get("phases") or []],
            samples=[ProbeSample(_at(s[0]), bool(s[1]), s[2], str(s[3])) for s in data.get("samples") or []],
        )


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
    measurements: list[MeasurementResult] = field(default_factory=list)
    thresholds: list[ThresholdResult] = field(default_factory=list)  # each threshold with its observed value
    diagnoses: list[dict[str, Any]] = field(default_factory=list)  # {"when": before|during|after, "report": ...}
    subject: str = ""  # the user's objects under test, in words (empty: chaoskit's workload or none)
    probes: list[ProbeRecord] = field(default_factory=list)  # phases judged, samples
    probe_windows: dict[str, Any] = field(default_factory=dict)  # the phases' time windows the probes were judged by
    verdict: Verdict = "passed"
    errors: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def settle(self, verdict: Verdict) -> None:
        """The run's verdict given what a phase found: the graver of the two, by one precedence (an interrupted run
        stays interrupted whatever failed after; chaoskit's own failure outranks a deviation it could not finish)."""
        self.verdict = max(self.verdict, verdict, key=GRAVITY.index)

    @property
    def score(self) -> float | None:
        return run_score(self)

    def to_dict(self) -> dict[str, Any]:
        """The JSON record users read (`-o json`, the journal's run-finished entry): its moments in RFC 3339, its
        durations in seconds (the `_s` fields)."""
        return {
            "schemaVersion": RUN_SCHEMA,
            "playbook": self.playbook,
            "cluster": self.cluster,
            "namespace": self.namespace,
            "journal": self.journal,
            "run_id": self.run_id,
            "started_at": rfc3339(self.started_at),
            "finished_at": rfc3339_or_none(self.finished_at),
            "before": [c.to_dict() for c in self.before],
            "steps": [s.to_dict() for s in self.steps],
            "after": [c.to_dict() for c in self.after],
            "measurements": [m.to_dict() for m in self.measurements],
            "thresholds": [t.to_dict() for t in self.thresholds],
            "diagnoses": list(self.diagnoses),
            "subject": self.subject,
            "probes": [p.to_dict() for p in self.probes],
            "probe_windows": windows(self.probe_windows, rfc3339),
            "verdict": self.verdict,
            "errors": list(self.errors),
            "exit_code": self.exit_code,
            "score": self.score,
        }

    @classmethod
    def from_dict(cls, data: Data) -> RunRecord:
        """A record read back from JSON (a journal, a report's input); what an older record lacks takes its default,
        and its moments may be RFC 3339 or the epoch seconds records held before schemaVersion."""
        verdict = str(data.get("verdict") or "passed")
        return cls(
            playbook=str(data.get("playbook") or ""),
            cluster=str(data.get("cluster") or ""),
            namespace=str(data.get("namespace") or ""),
            journal=str(data.get("journal") or ""),
            run_id=str(data.get("run_id") or ""),
            started_at=epoch(data.get("started_at")) or 0.0,
            finished_at=epoch(data.get("finished_at")) or 0.0,
            before=[CheckRecord.from_dict(c) for c in data.get("before") or []],
            steps=[StepRecord.from_dict(s) for s in data.get("steps") or []],
            after=[CheckRecord.from_dict(c) for c in data.get("after") or []],
            measurements=[MeasurementResult.from_dict(dict(m)) for m in data.get("measurements") or []],
            thresholds=[ThresholdResult.from_dict(t) for t in data.get("thresholds") or []],
            diagnoses=[dict(d) for d in data.get("diagnoses") or []],
            subject=str(data.get("subject") or ""),
            probes=[ProbeRecord.from_dict(p) for p in data.get("probes") or []],
            probe_windows=windows(data.get("probe_windows") or {}, _at),
            verdict=verdict if verdict in EXIT_CODES else "error",
            errors=[str(e) for e in data.get("errors") or []],
        )


def _phase(data: Data) -> PhaseResult:
    return PhaseResult(
        phase=data.get("phase", "during"),
        ok=bool(data.get("ok")),
        samples=int(data.get("samples") or 0),
        failed=int(data.get("failed") or 0),
        reason=str(data.get("reason") or ""),
        first_failed_at=epoch(data.get("first_failed_at")),
        success_rate=_seconds(data.get("success_rate")),
        latency=dict(data.get("latency") or {}),
    )


def _seconds(v: object) -> float | None:
    return None if v is None else float(cast(float, v))


def _at(value: object) -> float:
    return epoch(value) or 0.0


def windows(data: Data, at: Callable[[Any], Any]) -> dict[str, Any]:
    """The probes' phase windows (Phases.to_dict()) with each moment passed through `at`: to RFC 3339 and back."""
    out: dict[str, Any] = dict(data)

    def each(ts: Sequence[Any]) -> list[Any]:
        return [None if t is None else at(t) for t in ts]  # an open window's end stays open

    for phase in ("before", "after"):
        if out.get(phase):
            out[phase] = each(out[phase])
    out["during"] = [each(w) for w in out.get("during") or []]
    out["effects"] = each(out.get("effects") or [])
    return out
