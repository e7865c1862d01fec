"""The run loop's error paths with a failing node exec: what is journaled, what the switch is left doing, and which
failures are chaoskit's (exit 4) rather than the system's (exit 1)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

import pytest
from fake_faults import holds
from pydantic import BaseModel

from chaoskit.deadman import HEAL_DIR, line_argv
from chaoskit.engine import FaultResult, revert_journal, run_fault
from chaoskit.env import Env
from chaoskit.faults.base import Fault, FaultPlan
from chaoskit.journal import Injection, Journal
from chaoskit.model.params import NoParams
from chaoskit.safety import LOCK_PREFIX, acquire, holder_id
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.seams.shell import Completed
from chaoskit.step import resolve

NODE = "chaoskit-worker"


class TwoLineFault(Fault):
    """Two apply lines, two revert lines; whether it shows and heals is set per test."""

    name = "kube-proxy.two-lines"
    component = "kube-proxy"
    effect_timeout = 0.1
    recovery_timeout = 0.1
    shows: ClassVar[bool] = True
    heals: ClassVar[bool] = True

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        return FaultPlan(
            self.name, node, apply=("apply-1", "apply-2"), undo=("revert-1",), verify=("revert-2",), summary="s"
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return self.shows and holds(env, plan)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return self.heals and not holds(env, plan)


def _run(nodes: FakeNodeExec, tmp_path: Path, fault: Fault | None = None) -> tuple[FaultResult, Journal]:
    journal = Journal(tmp_path / "j.jsonl")
    env = Env(FakeKube(), nodes, "chaoskit")
    step = resolve(fault or TwoLineFault(), NoParams(), [Node(NODE, "control-plane")], target=NODE, duration=0)
    result = run_fault(env, step, journal=journal)
    return result, journal


def _lines(nodes: FakeNodeExec) -> list[str]:
    """The shell lines run on the node, in order (arm, apply, revert, disarm)."""
    return [c[-1] for c in nodes.calls]


def _fail(nodes: FakeNodeExec, line: str) -> None:
    nodes.runner.failures[(NODE, "sh", "-c", line)] = f"{line}: no"  # an apply line
    nodes.runner.failures[(NODE, *line_argv(line))] = f"{line}: no"  # a revert line


def _kinds(journal: Journal) -> list[str]:
    return [e.kind for e in journal.entries()]


def test_a_clean_run_arms_applies_reverts_then_disarms(tmp_path: Path) -> None:
    nodes = FakeNodeExec()
    result, journal = _run(nodes, tmp_path)
    assert result.held and not result.failures
    lines = _lines(nodes)
    assert lines.index("apply-1") > next(i for i, c in enumerate(nodes.calls) if "systemd-run" in c)
    assert lines.index("revert-1") < lines.index("revert-2")
    assert f"rm -f {HEAL_DIR}/{result.injection_id}.sh" in lines[-1]
    assert _kinds(journal) == ["injection", "reverted"]


def test_arming_fails_nothing_is_applied_and_it_is_chaoskits_failure(tmp_path: Path) -> None:
    nodes = FakeNodeExec()
    nodes.runner.failures[(NODE, "systemd-run")] = "Failed to start transient timer unit"
    result, journal = _run(nodes, tmp_path)
    assert "apply-1" not in _lines(nodes)
    assert result.failures and "could not arm" in result.failures[0] and not result.errors
    assert Journal(journal.path).pending() == [], "nothing applied: nothing for chaoskit revert to do"


def test_an_apply_line_fails_the_rest_is_reverted_and_it_is_chaoskits_failure(tmp_path: Path) -> None:
    nodes = FakeNodeExec()
    _fail(nodes, "apply-2")
    result, journal = _run(nodes, tmp_path)
    assert any("`apply-2` failed" in f for f in result.failures) and not result.held
    assert result.effect_s is None
    lines = _lines(nodes)
    assert "revert-1" in lines and "revert-2" in lines
    assert f"rm -f {HEAL_DIR}/{result.injection_id}.sh" in lines[-1], "reverted cleanly: the switch is disarmed"
    assert _kinds(journal) == ["injection", "reverted"]


def test_no_effect_is_the_systems_deviation_not_a_failure(tmp_path: Path) -> None:
    class Invisible(TwoLineFault):
        shows = False

    result, _ = _run(FakeNodeExec(), tmp_path, Invisible())
    assert result.errors and "no effect" in result.errors[0]
    assert not result.failures


def test_a_failed_revert_keeps_the_switch_armed_and_starts_it_now(tmp_path: Path) -> None:
    nodes = FakeNodeExec()
    _fail(nodes, "revert-1")
    result, journal = _run(nodes, tmp_path)
    assert result.failures and f"kube-proxy.two-lines on {NODE} not reverted" in result.failures[0]
    assert "retries it on the node" in result.failures[0] and str(journal.path) in result.failures[0]
    lines = _lines(nodes)
    assert "revert-2" in lines, "every revert line is tried"
    after = lines[lines.index("revert-2") + 1 :]
    assert not any(f"rm -f {HEAL_DIR}/{result.injection_id}.sh" in c for c in after), "never disarmed"
    assert any("--on-active=1s" in " ".join(c) for c in nodes.calls if "systemd-run" in c)
    assert result.recovery_s is None and not result.errors, "no recovery is waited for: the switch owns it now"
    assert _kinds(journal) == ["injection", "revert-failed"]
    assert [i.id for i in journal.pending()] == [result.injection_id]


def test_no_recovery_is_the_systems_deviation(tmp_path: Path) -> None:
    class Lasting(TwoLineFault):
        heals = False

    result, _ = _run(FakeNodeExec(), tmp_path, Lasting())
    assert result.errors and "did not recover" in result.errors[0] and not result.failures


def _pending_run(tmp_path: Path, kube: FakeKube) -> Journal:
    """A dead run's journal: two faults on two components, neither reverted, both components locked."""
    journal = Journal(tmp_path / "dead.jsonl")
    journal.append("run-started", run_id="r1", playbook="p")
    journal.injection(Injection("aaa", "kube-proxy.freeze", NODE, ("thaw",), 0.0))
    journal.injection(Injection("bbb", "scheduler.down", "chaoskit-control-plane", ("unpark",), 0.0))
    for component in ("kube-proxy", "scheduler"):
        acquire(kube, component, holder_id("r1"), 600)
    return journal


def _locked(kube: FakeKube) -> set[str]:
    return {p.rsplit(LOCK_PREFIX, 1)[1] for p in kube.objects if LOCK_PREFIX in p}


def test_revert_journal_tries_every_injection_and_frees_only_what_is_healed(tmp_path: Path) -> None:
    kube, nodes = FakeKube(), FakeNodeExec()
    journal = _pending_run(tmp_path, kube)
    nodes.runner.failures[(NODE, *line_argv("thaw"))] = "pkill: permission denied"
    outcome = revert_journal(Env(kube, nodes, "chaoskit"), journal)
    assert [i.id for i in outcome.reverted] == ["bbb"]
    assert [(i.id, "permission denied" in e) for i, e in outcome.left] == [("aaa", True)]
    assert _locked(kube) == {"kube-proxy"}, "the component still broken keeps its lock"
    failed = [e.data for e in journal.entries() if e.kind == "revert-failed"]
    assert failed[0]["id"] == "aaa" and "permission denied" in failed[0]["error"]
    assert [i.id for i in journal.pending()] == ["aaa"]


def test_revert_journal_frees_every_lock_once_all_is_reverted(tmp_path: Path) -> None:
    kube, nodes = FakeKube(), FakeNodeExec()
    journal = _pending_run(tmp_path, kube)
    outcome = revert_journal(Env(kube, nodes, "chaoskit"), journal)
    assert not outcome.left and len(outcome.reverted) == 2
    assert _locked(kube) == set()
    assert journal.pending() == []


def test_a_revert_from_another_host_frees_the_locks_the_run_took_under_its_own_name(tmp_path: Path) -> None:
    kube, nodes = FakeKube(), FakeNodeExec()
    journal = Journal(tmp_path / "dead.jsonl")
    journal.append("run-started", run_id="r1", playbook="p", holder="operator-pod-a/r1")  # the pod that died
    journal.injection(Injection("aaa", "kube-proxy.freeze", NODE, ("thaw",), 0.0))
    acquire(kube, "kube-proxy", "operator-pod-a/r1", 600)
    revert_journal(Env(kube, nodes, "chaoskit"), journal)  # by operator-pod-b, on another host name
    assert _locked(kube) == set()


@pytest.mark.parametrize("point", ["journaled", "armed", "applied-1", "applied-2", "holding", "reverting"])
def test_every_kill_point_is_reached_on_a_clean_run(
    point: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reached: list[str] = []
    monkeypatch.setattr("chaoskit.deadman.os.kill", lambda pid, sig: reached.append(point))
    monkeypatch.setenv("CHAOSKIT_TEST_KILL_AT", point)
    _run(FakeNodeExec(), tmp_path)
    assert reached == [point]


def test_a_run_killed_after_its_own_revert_but_before_letting_go_has_its_lock_freed(tmp_path: Path) -> None:
    kube, nodes = FakeKube(), FakeNodeExec()
    journal = _pending_run(tmp_path, kube)
    journal.append("reverted", id="aaa")
    journal.append("reverted", id="bbb")  # then killed: both leases still name the dead run
    outcome = revert_journal(Env(kube, nodes, "chaoskit"), journal)
    assert not outcome.reverted and not outcome.left
    assert _locked(kube) == set()


def test_a_revert_whose_switch_cannot_be_armed_again_says_nothing_retries_it(tmp_path: Path) -> None:
    nodes = FakeNodeExec()
    _fail(nodes, "revert-2")  # the verify line: the fault still holds
    armed_once = []

    def responder(argv: tuple[str, ...]) -> Completed | None:
        if "systemd-run" in argv:
            armed_once.append(argv)
            if len(armed_once) > 1:  # the first arming, before the apply, worked; the re-arming does not
                return Completed(argv, 1, "Failed to start transient timer unit")
        return None

    nodes.runner.responder = responder
    result, journal = _run(nodes, tmp_path)
    (failure,) = result.failures
    assert "not reverted" in failure and "nothing retries it" in failure and "for up to" not in failure
    assert "chaoskit revert" in failure
    (failed,) = [e.data for e in journal.entries() if e.kind == "revert-failed"]
    assert failed["rearmed"] is False and [i.id for i in journal.pending()] == [result.injection_id]


def test_a_plan_with_its_undo_removed_runs_only_its_verify_lines_and_is_not_reverted(tmp_path: Path) -> None:
    class Sabotaged(TwoLineFault):
        def plan(self, node: Node, params: BaseModel) -> FaultPlan:
            return super().plan(node, params).undo_removed()

    nodes = FakeNodeExec()
    _fail(nodes, "revert-2")  # what the verify line says while the fault holds
    result, journal = _run(nodes, tmp_path, Sabotaged())
    assert "revert-1" not in _lines(nodes) and "revert-2" in _lines(nodes)
    assert result.failures and "not reverted" in result.failures[0]
    assert [i.id for i in journal.pending()] == [result.injection_id], "kept open for chaoskit revert"


def _reverted_run(tmp_path: Path, kube: FakeKube) -> Journal:
    """A run whose one injection was journaled reverted, with its verify line, and whose lock is still taken."""
    journal = Journal(tmp_path / "done.jsonl")
    journal.append("run-started", run_id="r1", playbook="p")
    journal.injection(Injection("aaa", "kube-proxy.freeze", NODE, ("thaw", "thawed?"), 0.0, verify=("thawed?",)))
    journal.append("reverted", id="aaa")
    acquire(kube, "kube-proxy", holder_id("r1"), 600)
    return journal


def test_revert_journal_asks_what_was_reverted_its_verify_lines_again_and_reports_what_still_holds(
    tmp_path: Path,
) -> None:
    kube, nodes = FakeKube(), FakeNodeExec()
    journal = _reverted_run(tmp_path, kube)
    nodes.runner.failures[(NODE, *line_argv("thawed?"))] = "kube-proxy is still stopped"
    outcome = revert_journal(Env(kube, nodes, "chaoskit"), journal)
    assert [(i.id, "still stopped" in e) for i, e in outcome.held] == [("aaa", True)]
    assert not outcome.reverted and not outcome.left and not outcome.verified
    assert _locked(kube) == {"kube-proxy"}, "a component found broken keeps its lock"
    assert "thaw" not in _lines(nodes), "reported, not healed: the component may be another run's by now"


def test_revert_journal_counts_a_reverted_injection_whose_verify_lines_pass_as_verified(tmp_path: Path) -> None:
    kube, nodes = FakeKube(), FakeNodeExec()
    journal = _reverted_run(tmp_path, kube)
    outcome = revert_journal(Env(kube, nodes, "chaoskit"), journal)
    assert [i.id for i in outcome.verified] == ["aaa"] and not outcome.held
    assert _lines(nodes) == ["thawed?"] and _locked(kube) == set()


def test_the_journal_keeps_an_injections_verify_lines(tmp_path: Path) -> None:
    result, journal = _run(FakeNodeExec(), tmp_path)
    (entry,) = [e.data for e in journal.entries() if e.kind == "injection"]
    assert entry["revert"] == ["revert-1", "revert-2"] and entry["verify"] == ["revert-2"]
    assert [i.verify for i in journal.reverted()] == [("revert-2",)]


class HealsItself(TwoLineFault):
    """Holds for its first looks, then the cluster heals it (kubelet restarting a frozen process) mid-hold."""

    looks: ClassVar[int] = 0
    hold_watch = 0.05

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        type(self).looks += 1
        return type(self).looks <= 2 and holds(env, plan)


def test_a_fault_the_cluster_heals_mid_hold_is_recorded_as_held_only_as_long_as_it_was_seen(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    env = Env(FakeKube(), FakeNodeExec(), "chaoskit")
    step = resolve(HealsItself(), NoParams(), [Node(NODE, "control-plane")], target=NODE, duration=0.5)
    result = run_fault(env, step, journal=journal)
    assert result.stopped_holding_s is not None and result.held_s == result.stopped_holding_s < 0.5
    assert not result.errors and not result.failures  # the cluster's own healing is an observation, not an error


class FlakyOnce(TwoLineFault):
    """Holds throughout, but its check samples a moment and once says no (a rule caught between two re-flushes)."""

    looks: ClassVar[int] = 0
    hold_watch = 0.05

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        type(self).looks += 1
        return type(self).looks != 3 and holds(env, plan)


def test_one_no_from_a_check_that_samples_a_moment_is_no_end_of_the_hold(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    env = Env(FakeKube(), FakeNodeExec(), "chaoskit")
    step = resolve(FlakyOnce(), NoParams(), [Node(NODE, "control-plane")], target=NODE, duration=0.4)
    result = run_fault(env, step, journal=journal)
    assert result.stopped_holding_s is None and result.held_s >= 0.4


class HangsWhileHeld(TwoLineFault):
    """Its effect check hangs once the fault holds (the API server stalled under load)."""

    hold_watch = 0.05

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        if holds(env, plan) and any("apply-2" in c[-1] for c in env.nodes.calls):  # type: ignore[attr-defined]
            if getattr(self, "_seen", False):
                time.sleep(30)
            self._seen = True
        return holds(env, plan)


def test_an_effect_check_that_hangs_never_stretches_the_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import chaoskit.engine as engine

    monkeypatch.setattr(engine, "HOLD_LOOK_S", 0.2)
    env = Env(FakeKube(), FakeNodeExec(), "chaoskit")
    step = resolve(HangsWhileHeld(), NoParams(), [Node(NODE, "control-plane")], target=NODE, duration=0.5)
    t0 = time.monotonic()
    result = run_fault(env, step, journal=Journal(tmp_path / "j.jsonl"))
    assert time.monotonic() - t0 < 3 and result.held_s < 1.0 and result.stopped_holding_s is None
