"""The run record: typed, read back from its JSON unchanged, and one rule for a step that held."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from chaoskit.model.factcheck import FactCheck
from chaoskit.model.record import CheckRecord, ProbeRecord, RunRecord, StepRecord, held
from chaoskit.model.slo import PhaseResult, ProbeSample
from chaoskit.model.thresholds import ThresholdResult
from chaoskit.model.timeline import MeasurementResult, Sample


def _full() -> RunRecord:
    rec = RunRecord("shop", "chaoskit", "chaoskit-shop", "/j.jsonl", "r1", 100.0, 190.5, verdict="deviated")
    rec.before = [CheckRecord("cluster-healthy", True, "3 nodes Ready", 0.4)]
    rec.after = [CheckRecord("cluster-healthy", False, "2 nodes Ready", 30.0)]
    rec.steps = [
        StepRecord(
            "1-kubelet.stop",
            "kubelet.stop",
            "w",
            "stopped",
            31.2,
            40.0,
            2.5,
            9.1,
            120.0,
            [],
            [],
            2.0,
            {"verdict": "confirmed", "observations": []},
        ),
        StepRecord("2-scheduler.down", "scheduler.down", "cp", "moved", None, 5.0, None, errors=["no effect"]),
    ]
    rec.measurements = [
        MeasurementResult(
            "m",
            "hpa_scale_up",
            100.0,
            190.0,
            [Sample("hpa_scale_up", "scheduled", "scheduler", "p", 101.0, 101.5, 0.001)],
        )
    ]
    rec.thresholds = [ThresholdResult("m", "max", "scheduled", None, 1.0, 0.5, False, "within limits")]
    rec.diagnoses = [{"when": "before", "step": "", "report": {"cluster": "chaoskit", "reports": []}}]
    rec.subject = "Deployment shop/prices"
    phases = [PhaseResult("before", True, 10, 0, "ok"), PhaseResult("during", False, 20, 3, "3 failed", 150.0, 85.0)]
    rec.probes = [ProbeRecord("storefront", "http", 1.0, phases, [ProbeSample(150.0, False, None, "HTTP 503")])]
    rec.probe_windows = {"before": [100.0, 130.0], "during": [[130.0, 170.0]], "after": None, "effects": [131.0]}
    rec.errors = ["a threshold"]
    return rec


def test_the_record_says_its_schema_and_writes_moments_in_rfc_3339_utc() -> None:
    data = _full().to_dict()
    assert data["schemaVersion"] == "chaoskit.dev/run/v1"
    assert (data["started_at"], data["finished_at"]) == ("1970-01-01T00:01:40.000000Z", "1970-01-01T00:03:10.500000Z")
    (m,) = data["measurements"]
    assert (m["started_at"], m["samples"][0]["start"], m["samples"][0]["end"]) == (
        "1970-01-01T00:01:40.000000Z",
        "1970-01-01T00:01:41.000000Z",
        "1970-01-01T00:01:41.500000Z",
    )
    assert data["probes"][0]["samples"][0][0] == "1970-01-01T00:02:30.000000Z"
    assert data["probe_windows"]["during"] == [["1970-01-01T00:02:10.000000Z", "1970-01-01T00:02:50.000000Z"]]
    assert data["steps"][0]["scaled_up_at"] == "1970-01-01T00:02:00.000000Z"
    assert RunRecord("p", "c", "ns", "j", "r", 100.0).to_dict()["finished_at"] is None  # not finished: no moment


def test_a_record_from_before_rfc_3339_reads_its_epoch_seconds() -> None:
    data = _full().to_dict()
    data.pop("schemaVersion")
    data |= {"started_at": 100.0, "finished_at": 190.5, "probe_windows": {"during": [[130.0, 170.0]], "effects": []}}
    (m,) = data["measurements"]
    m |= {"started_at": 100.0, "samples": [{**m["samples"][0], "start": 101.0}]}
    old = RunRecord.from_dict(data)
    assert (old.started_at, old.finished_at, old.probe_windows["during"]) == (100.0, 190.5, [[130.0, 170.0]])
    assert old.measurements[0].samples[0].start == 101.0 and old.measurements[0].samples[0].seconds == 0.5
    assert RunRecord.from_dict(_full().to_dict()).steps[0].scaled_up_at == 120.0


def test_a_record_reads_back_from_its_json_unchanged() -> None:
    data = json.loads(json.dumps(_full().to_dict()))
    assert json.loads(json.dumps(RunRecord.from_dict(data).to_dict())) == data
    assert list(data) == [
        "schemaVersion",
        "playbook",
        "cluster",
        "namespace",
        "journal",
        "run_id",
        "started_at",
        "finished_at",
        "before",
        "steps",
        "after",
        "measurements",
        "thresholds",
        "diagnoses",
        "subject",
        "probes",
        "probe_windows",
        "verdict",
        "errors",
        "exit_code",
        "score",
    ]


@pytest.mark.parametrize(
    ("effect_s", "recovery_s", "errors", "failures", "expected"),
    [
        (1.0, 2.0, [], [], True),
        (None, 2.0, [], [], False),  # no effect seen
        (1.0, None, [], [], False),  # no recovery
        (1.0, 2.0, ["deviated"], [], False),
        (1.0, 2.0, [], ["revert failed"], False),
    ],
)
def test_a_step_held_only_when_its_effect_and_recovery_were_seen_and_nothing_went_wrong(
    effect_s: float | None, recovery_s: float | None, errors: list[str], failures: list[str], expected: bool
) -> None:
    step = StepRecord("s", "f", "n", effect_s=effect_s, recovery_s=recovery_s, errors=errors, failures=failures)
    assert held(effect_s, recovery_s, errors, failures) is step.held is StepRecord.from_dict(step.to_dict()).held
    assert step.held is expected


def test_the_score_counts_held_steps_and_the_share_of_probe_phases_held() -> None:
    assert _full().score == round(100 * (2 * 1 + 1 * 0 + 1 * 0.5) / 4, 1)


def test_an_older_record_without_a_breached_flag_is_judged_by_its_limits() -> None:
    assert ThresholdResult.from_dict({"measurement": "m", "stat": "max", "max": "1s", "observed": 2.0}).breached
    assert not ThresholdResult.from_dict({"measurement": "m", "stat": "max", "max": "1m", "observed": 2.0}).breached


@dataclass(frozen=True)
class _Named:
    name: str


@dataclass(frozen=True)
class _Step:
    """A step as planned, as a step's record reads it."""

    name: str = "2.1-kubelet.stop"
    fault: _Named = _Named("kubelet.stop")
    node: _Named = _Named("w")
    weight: float = 2.0


@dataclass(frozen=True)
class _Outcome:
    """What the engine saw of a step, as a step's record reads it."""

    summary: str = "stopped"
    effect_s: float | None = 3.0
    held_s: float = 10.0
    stopped_holding_s: float | None = None
    recovery_s: float | None = 4.5
    errors: tuple[str, ...] = ("no recovery within 180s",)
    failures: tuple[str, ...] = ()
    fact_check: FactCheck = FactCheck.of([])


def test_a_step_record_is_made_of_the_step_as_planned_before_its_result_is_known() -> None:
    rec = StepRecord.of(_Step())
    assert rec == StepRecord("2.1-kubelet.stop", "kubelet.stop", "w", weight=2.0)


def test_a_step_record_of_its_result_keeps_what_its_hold_wrote_after_the_engines_own() -> None:
    while_held = StepRecord.of(_Step())
    while_held.named_s, while_held.scaled_up_at = 7.5, 1234.0
    while_held.injected_at, while_held.reverted_at = 1230.0, 1240.0
    while_held.errors, while_held.failures = ["held: probe"], ["could not raise the HPA's minReplicas to 3"]
    rec = StepRecord.of(_Step(), _Outcome(), while_held=while_held)
    assert rec.to_dict() == {
        "step": "2.1-kubelet.stop",
        "fault": "kubelet.stop",
        "node": "w",
        "summary": "stopped",
        "effect_s": 3.0,
        "held_s": 10.0,
        "stopped_holding_s": None,
        "recovery_s": 4.5,
        "named_s": 7.5,
        "scaled_up_at": "1970-01-01T00:20:34.000000Z",
        "errors": ["no recovery within 180s", "held: probe"],
        "failures": ["could not raise the HPA's minReplicas to 3"],
        "weight": 2.0,
        "fact_check": FactCheck.of([]).to_dict(),
        "injected_at": "1970-01-01T00:20:30.000000Z",
        "reverted_at": "1970-01-01T00:20:40.000000Z",
    }
    assert while_held.errors == ["held: probe"]  # the hold's own record is left as it was
