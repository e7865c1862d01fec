"""Thresholds turned into a verdict: pure, from the playbook's limits and the measurements' summaries.

A threshold whose statistic does not exist (too few samples for p99, a stage never reached) fails closed: a
resilience gate must not pass on a figure nobody measured. The result says why, so the fix (use max, run more
scale-ups) is obvious.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from chaoskit.figures import seconds
from chaoskit.model.duration import DurationError, parse_duration
from chaoskit.model.playbook import Threshold
from chaoskit.model.timeline import MeasurementResult


@dataclass(frozen=True)
class ThresholdResult:
    measurement: str
    stat: str
    stage: str
    min: float | None
    max: float | None
    observed: float | None
    breached: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThresholdResult:
        """A threshold of a record read back; one without its own `breached` flag (an older record) is judged by
        its observed value against its limits."""
        low, high, observed = _number(data.get("min")), _number(data.get("max")), _number(data.get("observed"))
        if "breached" in data:
            breached = bool(data["breached"])
        else:
            above, below = high is not None and observed is not None and observed > high, False
            below = low is not None and observed is not None and observed < low
            breached = above or below
        return cls(
            str(data.get("measurement") or ""),
            str(data.get("stat") or ""),
            str(data.get("stage") or "total"),
            low,
            high,
            observed,
            breached,
            str(data.get("reason") or ""),
        )


def _number(v: object) -> float | None:
    """A limit or an observed value as read back: seconds, or a duration some older records wrote as text ("5s")."""
    if v is None:
        return None
    try:
        return parse_duration(v)
    except DurationError:
        return None


def evaluate(threshold: Threshold, results: Mapping[str, MeasurementResult]) -> ThresholdResult:
    stage = threshold.stage or "total"
    low, high = threshold.min, threshold.max

    def verdict(observed: float | None, breached: bool, reason: str) -> ThresholdResult:
        return ThresholdResult(threshold.measurement, threshold.stat, stage, low, high, observed, breached, reason)

    result = results.get(threshold.measurement)
    if result is None:
        return verdict(None, True, f"measurement {threshold.measurement!r} did not run")
    summary = result.summaries().get(stage)
    if summary is None:
        known = ", ".join(result.summaries()) or "none"
        return verdict(None, True, f"no samples for stage {stage!r} (stages measured: {known})")
    observed = summary.get(threshold.stat)
    if observed is None:
        why = "; ".join(n for n in summary.notes if n.startswith(threshold.stat)) or "no samples"
        return verdict(None, True, f"{threshold.stat} of {stage} not available: {why}")
    if high is not None and observed > high:
        return verdict(observed, True, f"{threshold.stat} of {stage} is {seconds(observed)}, above {seconds(high)}")
    if low is not None and observed < low:
        return verdict(observed, True, f"{threshold.stat} of {stage} is {seconds(observed)}, below {seconds(low)}")
    return verdict(observed, False, f"{threshold.stat} of {stage} is {seconds(observed)}, within limits")
