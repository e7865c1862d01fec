"""chaoskit.model.score: the resilience score of a run and a suite, by the documented formula."""

from __future__ import annotations

from typing import Any

from chaoskit.model.record import RunRecord
from chaoskit.model.score import run_score, suite_score


def _step(held: bool, weight: float = 1.0) -> dict[str, Any]:
    return {"effect_s": 1.0, "recovery_s": 2.0 if held else None, "errors": [], "failures": [], "weight": weight}


def _probe(phases: list[bool], weight: float = 1.0) -> dict[str, Any]:
    return {"weight": weight, "phases": [{"phase": "during", "ok": ok} for ok in phases]}


def test_a_run_scores_its_steps_and_the_share_of_each_probes_phases_that_held_by_weight() -> None:
    run = {
        "verdict": "deviated",
        "steps": [_step(True, 2), _step(False)],
        "probes": [_probe([True, False, True, True], weight=4)],
    }
    assert run_score(RunRecord.from_dict(run)) == round(100 * (2 * 1 + 1 * 0 + 4 * 0.75) / 7, 1)  # 71.4


def test_aborted_scores_zero_and_chaoskits_own_failure_has_no_score() -> None:
    assert run_score(RunRecord.from_dict({"verdict": "aborted", "steps": [], "probes": []})) == 0.0
    assert run_score(RunRecord.from_dict({"verdict": "error", "steps": [_step(True)]})) is None
    assert run_score(RunRecord.from_dict({"verdict": "interrupted", "steps": [_step(True)]})) is None


def test_a_suite_pools_every_scored_runs_items() -> None:
    runs = [
        {"verdict": "passed", "steps": [_step(True)] * 3},
        {"verdict": "deviated", "steps": [_step(False)]},
        {"verdict": "error", "steps": [_step(False)] * 5},
    ]
    assert suite_score(RunRecord.from_dict(r) for r in runs) == 75.0
