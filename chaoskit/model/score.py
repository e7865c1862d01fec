"""The resilience score: how much of what a playbook tried the system came through, 0 to 100.

    run score   = 100 × Σ wᵢ·sᵢ / Σ wᵢ   over its fault steps and its probes
    step    sᵢ  = 1 when the fault's effect was seen and its component was healthy again after the revert, with no
                  deviation recorded; else 0                                     (weight: the step's `weight`, 1)
    probe   sᵢ  = the share of its judged phases that held (before, during, after, effect)
                                                                                 (weight: the probe's `weight`, 1)
    suite score = the same sum over every run's steps and probes together (each run counts by its weights)

A run aborted before injecting (its steady state did not hold) scores 0: the system was not fit to be tested. A run
chaoskit could not carry out (verdict error or interrupted) has no score: the system was not judged. Thresholds are
not scored: a breached one deviates the run on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Item = tuple[float, float]  # (weight, how much of it held: 0 to 1)
UNSCORED = ("error", "interrupted")


def run_items(run: Mapping[str, Any]) -> list[Item] | None:
    """A run record's weighted items; None when it has no score."""
    if run.get("verdict") in UNSCORED:
        return None
    if run.get("verdict") == "aborted":
        return [(1.0, 0.0)]
    items: list[Item] = [(float(s.get("weight", 1.0)), 1.0 if step_held(s) else 0.0) for s in run.get("steps", [])]
    for probe in run.get("probes", []):
        phases = probe.get("phases") or []
        held = sum(1 for p in phases if p.get("ok")) / len(phases) if phases else 0.0
        items.append((float(probe.get("weight", 1.0)), held))
    return items


def step_held(step: Mapping[str, Any]) -> bool:
    """StepRecord.ok, read from a record: its effect seen, its component healthy again, nothing deviated or failed."""
    return (
        step.get("effect_s") is not None
        and step.get("recovery_s") is not None
        and not step.get("errors")
        and not step.get("failures")
    )


def score(items: Iterable[Item]) -> float | None:
    pairs = list(items)
    total = sum(w for w, _ in pairs)
    if not pairs:
        return None
    if total == 0:
        return 100.0 * sum(s for _, s in pairs) / len(pairs)  # every weight 0: each counts the same
    return round(100.0 * sum(w * s for w, s in pairs) / total, 1)


def run_score(run: Mapping[str, Any]) -> float | None:
    items = run_items(run)
    return None if items is None else score(items)


def suite_score(runs: Iterable[Mapping[str, Any]]) -> float | None:
    every = [i for r in runs if (items := run_items(r)) is not None for i in items]
    return score(every)
