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

from collections.abc import Iterable, Sequence
from typing import Protocol


class Weighed(Protocol):
    """A step or a probe of a record, as the score reads it."""

    @property
    def weight(self) -> float: ...


class Step(Weighed, Protocol):
    @property
    def held(self) -> bool: ...


class Probe(Weighed, Protocol):
    @property
    def held_share(self) -> float: ...


class Run(Protocol):
    """A run record as the score reads it (model.record.RunRecord)."""

    @property
    def verdict(self) -> str: ...

    @property
    def steps(self) -> Sequence[Step]: ...

    @property
    def probes(self) -> Sequence[Probe]: ...


Item = tuple[float, float]  # (weight, how much of it held: 0 to 1)
UNSCORED = ("error", "interrupted")


def run_items(run: Run) -> list[Item] | None:
    """A run record's weighted items; None when it has no score."""
    if run.verdict in UNSCORED:
        return None
    if run.verdict == "aborted":
        return [(1.0, 0.0)]
    items: list[Item] = [(s.weight, 1.0 if s.held else 0.0) for s in run.steps]
    return items + [(p.weight, p.held_share) for p in run.probes]


def score(items: Iterable[Item]) -> float | None:
    pairs = list(items)
    total = sum(w for w, _ in pairs)
    if not pairs:
        return None
    if total == 0:
        return 100.0 * sum(s for _, s in pairs) / len(pairs)  # every weight 0: each counts the same
    return round(100.0 * sum(w * s for w, s in pairs) / total, 1)


def run_score(run: Run) -> float | None:
    items = run_items(run)
    return None if items is None else score(items)


def suite_score(runs: Iterable[Run]) -> float | None:
    every = [i for r in runs if (items := run_items(r)) is not None for i in items]
    return score(every)
