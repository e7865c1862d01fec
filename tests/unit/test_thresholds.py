"""Thresholds into verdicts: within limits passes; above max, below min or no such figure is a breach."""

from __future__ import annotations

from chaoskit.model.playbook import Threshold
from chaoskit.model.thresholds import evaluate
from chaoskit.model.timeline import MeasurementResult, Sample, summarize


def result(*seconds: float, stage: str = "scheduled") -> dict[str, MeasurementResult]:
    r = MeasurementResult("scale-up", "hpa_scale_up", 0.0)
    r.samples = [Sample("hpa_scale_up", stage, "scheduler", f"p{i}", 0.0, s, 0.001) for i, s in enumerate(seconds)]
    return {"scale-up": r}


def threshold(**kw: object) -> Threshold:
    return Threshold.model_validate({"measurement": "scale-up", **kw})


def test_a_figure_within_its_limits_passes() -> None:
    out = evaluate(threshold(stat="max", stage="scheduled", max="5s"), result(1.0, 2.0))
    assert not out.breached and out.observed == 2.0


def test_above_max_and_below_min_are_breaches_with_the_figure() -> None:
    above = evaluate(threshold(stat="p50", stage="scheduled", max="1s"), result(2.0, 3.0))
    assert above.breached and "above 1s" in above.reason
    below = evaluate(threshold(stat="max", stage="scheduled", min="10s"), result(2.0))
    assert below.breached and "below 10s" in below.reason


def test_a_percentile_with_too_few_samples_fails_closed_and_says_why() -> None:
    out = evaluate(threshold(stat="p99", stage="scheduled", max="30s"), result(1.0, 2.0))
    assert out.breached and out.observed is None and "at least 100 samples" in out.reason


def test_a_stage_never_reached_or_a_measurement_never_run_is_a_breach() -> None:
    assert (
        "no samples for stage 'ready'" in evaluate(threshold(stat="max", stage="ready", max="1s"), result(1.0)).reason
    )
    assert "did not run" in evaluate(threshold(stat="max", max="1s"), {}).reason


def test_the_default_stage_is_end_to_end_and_mean_and_count_exist() -> None:
    assert evaluate(threshold(stat="max", max="5s"), result(1.0, 4.0)).stage == "total"
    sm = summarize(result(1.0, 3.0)["scale-up"].samples)
    assert sm.get("mean") == 2.0 and sm.get("count") == 2.0
