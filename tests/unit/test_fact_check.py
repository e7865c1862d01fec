"""The fact check: each of a fault's checks asked where it must say no, judged, recorded, and given its exit code."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from fake_faults import holds, run_one_step
from pydantic import BaseModel

from chaoskit.engine import run_fault
from chaoskit.env import Env
from chaoskit.exporters.prometheus import Exporter
from chaoskit.faults.base import Fault, FaultPlan, IncompleteFault, Named, NoOpControl, register
from chaoskit.journal import Journal
from chaoskit.model.factcheck import Observation, judge
from chaoskit.model.params import NoParams
from chaoskit.registry import FAULTS
from chaoskit.reports.run_junit import render_run_junit
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.step import resolve

NODE = "chaoskit-worker"
NODES = [Node("chaoskit-control-plane", "control-plane"), Node(NODE, "worker")]


def _o(moment: str, question: str, answer: bool | None) -> Observation:
    return Observation(moment, question, answer, 0.1)  # type: ignore[arg-type]


CLEAN = [
    _o("before", "took_effect", False),
    _o("after", "took_effect", True),
    _o("during", "recovered", False),
    _o("during", "reverted", False),
    _o("after", "recovered", True),
]


@pytest.mark.parametrize(
    ("change", "verdict"),
    [
        ({}, "confirmed"),
        ({0: True}, "inconclusive"),  # in effect before anything was injected
        ({2: True}, "inconclusive"),  # recovered while the fault held
        ({3: True}, "inconclusive"),  # its revert's verify passed while the fault held
        ({3: None}, "inconclusive"),  # its revert's verify gave no answer while the fault held
        ({1: None}, "mismatch"),  # no effect seen
        ({4: None}, "mismatch"),  # no recovery
    ],
)
def test_each_answer_decides_the_verdict(change: dict[int, bool | None], verdict: str) -> None:
    seen = [Observation(o.moment, o.question, change.get(i, o.answer), o.seconds) for i, o in enumerate(CLEAN)]
    assert judge(seen) == verdict


def test_a_question_never_asked_is_inconclusive() -> None:
    assert judge(CLEAN[:1]) == "inconclusive"  # the injection failed: nothing was observed
    assert judge(CLEAN[:3]) == "inconclusive"  # the revert failed: recovery was never asked
    no_effect = [CLEAN[0], _o("after", "took_effect", None)]
    assert judge(no_effect) == "mismatch", "no effect: the recovery check had nothing held to be asked about"


class Probe(Fault):
    """A fault on the fake node whose checks are set per test: `blind_before` says in effect from the start,
    `blind_during` says recovered all along, `shows`/`heals` whether it ever shows or heals."""

    name = "test.fact"
    component = "test"
    target_role = "worker"
    named = Named("test", "x")
    no_op = NoOpControl(wait=0.1)
    effect_timeout = 0.2
    recovery_timeout = 0.2
    blind_before: ClassVar[bool] = False
    blind_during: ClassVar[bool] = False
    shows: ClassVar[bool] = True
    heals: ClassVar[bool] = True

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        return FaultPlan(
            self.name, node, apply=("break",), undo=("heal",), verify=("healed",), summary="s", setup=("probe",)
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return self.blind_before or (self.shows and holds(env, plan))

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return self.blind_during or (self.heals and not holds(env, plan))


def _fault(**kw: bool) -> Probe:
    return type("P", (Probe,), kw)()  # type: ignore[no-any-return]


def _engine(tmp_path: Path, fault: Fault) -> tuple[list[str], object]:
    nodes = FakeNodeExec()
    step = resolve(fault, NoParams(), [Node(NODE, "control-plane")], target=NODE, duration=0)
    result = run_fault(Env(FakeKube(), nodes, "chaoskit"), step, journal=Journal(tmp_path / "j.jsonl"))
    return [c[-1] for c in nodes.calls], result


def test_a_check_that_says_in_effect_before_the_injection_stops_the_step_with_nothing_injected(tmp_path: Path) -> None:
    lines, result = _engine(tmp_path, _fault(blind_before=True))
    assert "probe" in lines and "break" not in lines and "heal" in lines, lines  # set up, never broken, cleaned up
    assert result.fact_check.verdict == "inconclusive"  # type: ignore[attr-defined]
    assert result.failures and "before anything was injected" in result.failures[0]  # type: ignore[attr-defined]
    assert [o.moment for o in result.observations] == ["before"]  # type: ignore[attr-defined]


def test_a_recovery_check_that_says_recovered_while_the_fault_holds_is_inconclusive(tmp_path: Path) -> None:
    lines, result = _engine(tmp_path, _fault(blind_during=True))
    assert lines.index("probe") < lines.index("break") < lines.index("heal")
    assert result.fact_check.verdict == "inconclusive"  # type: ignore[attr-defined]
    assert result.failures and "while the fault held" in result.failures[0]  # type: ignore[attr-defined]


def test_a_verify_line_that_passes_while_the_fault_holds_is_inconclusive(tmp_path: Path) -> None:
    nodes = FakeNodeExec(verify_passes=True)
    step = resolve(_fault(), NoParams(), [Node(NODE, "control-plane")], target=NODE, duration=0)
    result = run_fault(Env(FakeKube(), nodes, "chaoskit"), step, journal=Journal(tmp_path / "j.jsonl"))
    assert result.fact_check.verdict == "inconclusive"
    assert any("verify lines passed while the fault held" in f for f in result.failures), result.failures


def test_a_clean_step_is_confirmed_with_every_answer_recorded(tmp_path: Path) -> None:
    _, result = _engine(tmp_path, _fault())
    fc = result.fact_check  # type: ignore[attr-defined]
    assert fc.verdict == "confirmed" and result.held  # type: ignore[attr-defined]
    assert [(o.moment, o.question, o.answer) for o in fc.observations] == [
        ("before", "took_effect", False),
        ("after", "took_effect", True),
        ("during", "recovered", False),
        ("during", "reverted", False),
        ("after", "recovered", True),
    ]


@pytest.mark.parametrize(
    ("kw", "verdict", "fact", "exit_code"),
    [
        ({}, "passed", "confirmed", 0),
        ({"shows": False}, "deviated", "mismatch", 1),
        ({"heals": False}, "deviated", "mismatch", 1),
        ({"blind_before": True}, "error", "inconclusive", 4),
        ({"blind_during": True}, "error", "inconclusive", 4),
    ],
)
def test_a_run_gives_each_fact_check_its_exit_code_and_records_it_everywhere(
    tmp_path: Path, kw: dict[str, bool], verdict: str, fact: str, exit_code: int
) -> None:
    rec = run_one_step(tmp_path, type("P", (Probe,), {**kw, "__doc__": Probe.__doc__}), NODES, "  diagnose: false\n")
    assert (rec.verdict, rec.exit_code) == (verdict, exit_code), rec.errors
    data = rec.to_dict()
    assert data["steps"][0]["fact_check"]["verdict"] == fact
    assert f"fact check: {fact}" in render_run_junit(rec)
    exporter = Exporter()
    exporter.observe_record(data)
    assert (
        exporter.registry.get_sample_value(
            "chaoskit_fact_checks_total", {"playbook": "p", "fault": "test.fact", "verdict": fact}
        )
        == 1.0
    )


def test_the_catalog_refuses_a_fault_without_its_own_checks_or_a_no_op_control() -> None:
    class Unchecked(Fault):
        """Checks inherited from nowhere."""

        name = "test.unchecked"
        component = "test"
        named = Named("test", "x")
        no_op = NoOpControl(wait=1.0)

        def plan(self, node: Node, params: BaseModel) -> FaultPlan:
            return FaultPlan(self.name, node, apply=(), undo=(), verify=(), summary="")

    with pytest.raises(IncompleteFault, match="took_effect"):
        register(Unchecked)

    del_attr = {k: v for k, v in vars(Probe).items() if k != "no_op"}
    without = type("NoControl", (Fault,), {**del_attr, "name": "test.no-control", "__doc__": "x"})
    with pytest.raises(IncompleteFault, match="no_op"):
        register(without)
    assert "test.unchecked" not in FAULTS and "test.no-control" not in FAULTS


def test_the_observations_read_in_the_order_they_were_asked() -> None:
    from chaoskit.model.factcheck import FactCheck, observed_words

    words = observed_words(FactCheck.of(CLEAN).to_dict())
    assert words == (
        "before: in effect? no (0.1s) · injected: in effect? yes (0.1s) · held: recovered? no (0.1s) · "
        "held: reverted? no (0.1s) · reverted: recovered? yes (0.1s)"
    )


def test_an_effect_check_that_cannot_answer_before_the_injection_injects_nothing(tmp_path: Path) -> None:
    """Seen in the operator: its effect check was refused by the API (RBAC), and an error read as "not in effect"
    let the step inject a fault no check could see."""
    from chaoskit.seams.kube import Forbidden

    class Refused(Probe):
        def took_effect(self, env: Env, plan: FaultPlan) -> bool:
            raise Forbidden("POST /apis/discovery.k8s.io/v1/...: HTTP 403 Forbidden")

    lines, result = _engine(tmp_path, Refused())
    assert "break" not in lines and "heal" in lines
    assert result.fact_check.verdict == "inconclusive"  # type: ignore[attr-defined]
    assert "could not answer before the injection" in result.failures[0] and "403" in result.failures[0]  # type: ignore[attr-defined]
