"""Judging probe samples, phase by phase (pure: the samples and the phases' time windows come in).

Each sample is put in the phase whose window holds its time: before (until the first injection), during (from a
fault's effect until its component is healthy again after the revert), after (from the steady state after the last
revert), or none of them (a fault being applied, or between steps: kept in the record, judged nowhere). "effect" is
the first sample at or after each fault's effect. An http probe's phase is judged against its SLO (the effect phase,
a request per fault, on its success rate and max only: a percentile of one request is that request, a tail the
host's stalls decide); any other probe's phase fails on its first failed sample. A phase that was judged but holds
no sample fails too: nothing was seen, so nothing was kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from chaoskit.model.moments import rfc3339_or_none
from chaoskit.model.probes import Phase, Probe, Slo
from chaoskit.model.timeline import percentile

Window = tuple[float, float]  # wall clock [start, end)


@dataclass(frozen=True)
class ProbeSample:
    at: float  # wall clock when the sample was taken (an http request: when it was sent)
    ok: bool
    value: float | None = None  # http: latency in seconds (answered requests); promql/k8s: the value read
    detail: str = ""  # why it failed, or what was read


@dataclass
class Phases:
    """The time windows of one run, as the runner saw them."""

    before: Window | None = None
    during: list[Window] = field(default_factory=list)
    after: Window | None = None
    effects: list[float] = field(default_factory=list)  # when each fault's effect showed

    def to_dict(self) -> dict[str, Any]:
        finite = [w for w in (self.before, self.after) if w is not None]
        end = max((e for _, e in finite if e != float("inf")), default=None)
        after = None if self.after is None else [self.after[0], end if self.after[1] == float("inf") else self.after[1]]
        return {
            "before": None if self.before is None else list(self.before),
            "during": [list(w) for w in self.during],
            "after": after,
            "effects": list(self.effects),
        }

    def of(self, at: float) -> Phase | None:
        if self.before and self.before[0] <= at < self.before[1]:
            return "before"
        if any(start <= at < end for start, end in self.during):
            return "during"
        if self.after and self.after[0] <= at < self.after[1]:
            return "after"
        return None


@dataclass(frozen=True)
class PhaseResult:
    phase: Phase
    ok: bool
    samples: int
    failed: int
    reason: str  # in words: what was kept, or what broke and by how much
    first_failed_at: float | None = None
    success_rate: float | None = None  # http: percent
    latency: dict[str, float] = field(default_factory=dict)  # http: p50, p99, max of the answered requests

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "first_failed_at": rfc3339_or_none(self.first_failed_at)}


def judge(probe: Probe, samples: Sequence[ProbeSample], phases: Phases) -> list[PhaseResult]:
    """One result per phase in probe.when, in that order."""
    out = []
    for phase in probe.when:
        if phase == "effect":
            mine = [s for s in (_first_at_or_after(samples, t) for t in phases.effects) if s is not None]
        else:
            mine = [s for s in samples if phases.of(s.at) == phase]
        out.append(_judge_phase(probe, phase, mine))
    return out


def _first_at_or_after(samples: Sequence[ProbeSample], t: float) -> ProbeSample | None:
    return next((s for s in sorted(samples, key=lambda s: s.at) if s.at >= t), None)


def _judge_phase(probe: Probe, phase: Phase, samples: list[ProbeSample]) -> PhaseResult:
    failed = [s for s in samples if not s.ok]
    first = min((s.at for s in failed), default=None)
    if not samples:
        return PhaseResult(phase, False, 0, 0, f"no sample {phase}: nothing was seen, so nothing was kept")
    if probe.slo is None:  # promql, k8s, command: every sample must pass
        if failed:
            why = failed[0].detail or "failed"
            return PhaseResult(
                phase,
                False,
                len(samples),
                len(failed),
                f"{len(failed)} of {len(samples)} samples failed, first: {why}",
                first,
            )
        return PhaseResult(phase, True, len(samples), 0, f"all {len(samples)} samples passed")
    return _judge_slo(probe.slo, phase, samples, failed, first)


def _judge_slo(
    slo: Slo, phase: Phase, samples: list[ProbeSample], failed: list[ProbeSample], first: float | None
) -> PhaseResult:
    rate = 100.0 * (len(samples) - len(failed)) / len(samples)
    latencies = [s.value for s in samples if s.ok and s.value is not None]
    latency = (
        {"p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99), "max": max(latencies)}
        if (latencies)
        else {}
    )
    broken = []
    if slo.success_rate is not None and rate < slo.success_rate:
        broken.append(
            f"success {rate:.1f}% < {slo.success_rate:g}% ({len(failed)} of {len(samples)} failed"
            f"{', first: ' + failed[0].detail if failed and failed[0].detail else ''})"
        )
    for stat in ("max",) if phase == "effect" else ("p50", "p99", "max"):  # effect: one request per fault, no spread
        bound = getattr(slo, stat)
        if bound is None:
            continue
        if stat not in latency:
            broken.append(f"{stat}: no request answered")
        elif latency[stat] > bound:
            broken.append(f"{stat} {latency[stat] * 1000:.0f}ms > {bound * 1000:g}ms")
    shown = ", ".join(f"{k} {v * 1000:.0f}ms" for k, v in latency.items())
    kept = f"success {rate:.1f}% of {len(samples)}" + (f", {shown}" if shown else "")
    small = (
        " (p99 of fewer than 100 requests is their slowest)"
        if len(latencies) < 100 and slo.p99 and phase != "effect"
        else ""
    )
    reason = ("; ".join(broken) if broken else kept) + small
    return PhaseResult(phase, not broken, len(samples), len(failed), reason, first, round(rate, 2), latency)
