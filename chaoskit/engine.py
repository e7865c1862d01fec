"""The run loop for one fault: journal → arm the dead-man switch → inject → confirm the effect → hold →
revert (always: success, failure, Ctrl-C, SIGTERM) → confirm recovery.

SIGKILL cannot be caught: the switch armed inside the node heals it at the deadline instead.
"""

# Over 300 lines: one injection's whole path, whose order is the revert contract: read top to bottom.

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType

from chaoskit import subject as subjects
from chaoskit.deadman import RETRY_FOR_S, NotRearmed, Switch, arm, heal, kill_point, run_line
from chaoskit.env import Env
from chaoskit.errors import ChaoskitError, ToolError
from chaoskit.events import (
    Armed,
    EffectObserved,
    Emit,
    Injected,
    Recovered,
    Reverted,
    Reverting,
    StoppedHolding,
    ignore,
    tapped,
)
from chaoskit.faults.base import HandoffError, hand_over
from chaoskit.journal import Injection, Journal
from chaoskit.model.factcheck import SAID, FactCheck, Moment, Observation, Question
from chaoskit.model.record import held
from chaoskit.safety import holder_id, release_run_locks
from chaoskit.seams.nodeexec import named, verify_argv
from chaoskit.seams.poll import poll
from chaoskit.step import ResolvedStep

CHECK_INTERVAL = 0.5  # seconds between two looks at a fault's effect or recovery
INTERRUPTED = "interrupted while holding the fault"
HOLD_LOOK_S = 1.0  # the longest the hold's last look may take past the hold's end (a slower one is no answer)
VERIFY_TIMEOUT_S = 30.0  # a verify line asked while the fault holds fails at once (its waits are for the revert)


class InjectError(ToolError):
    pass


@dataclass
class FaultResult:
    fault: str
    node: str
    injection_id: str
    summary: str
    effect_s: float | None = None  # inject -> effect observed
    held_s: float = 0.0  # inject -> revert, or -> when the watch first saw it no longer holding
    stopped_holding_s: float | None = None  # inject -> the effect check said no during the hold (it healed itself)
    recovery_s: float | None = None  # revert -> component healthy again
    errors: list[str] = field(default_factory=list)  # the system deviated: no effect, no recovery
    failures: list[str] = field(default_factory=list)  # chaoskit could not do its job: arm, inject or revert failed
    observations: list[Observation] = field(default_factory=list)  # every answer of the fault's checks, in order

    @property
    def held(self) -> bool:
        return held(self.effect_s, self.recovery_s, self.errors, self.failures)

    @property
    def fact_check(self) -> FactCheck:
        return FactCheck.of(self.observations)


def new_injection_id() -> str:
    return uuid.uuid4().hex[:12]


def seconds_until(check: Callable[[], bool], timeout: float) -> float | None:
    """Seconds until a fault's check passes, or None at timeout; API and tool errors count as 'not yet'."""
    polled = poll(check, timeout, CHECK_INTERVAL)
    return polled.seconds if polled.done else None


def ask_once(moment: Moment, question: Question, check: Callable[[], bool]) -> Observation:
    """One answer of a check where it must say no; an error is no answer (None): before the injection the check then
    cannot tell anything, while the fault holds it counts as "not recovered", as it does while polling."""
    started = time.monotonic()
    answer: bool | None
    try:
        answer, detail = bool(check()), ""
    except ChaoskitError as exc:
        answer, detail = None, f"{type(exc).__name__}: {exc}"
    return Observation(moment, question, answer, round(time.monotonic() - started, 3), detail[:300])


def polled(moment: Moment, question: Question, check: Callable[[], bool], timeout: float) -> Observation:
    """A check polled until it says yes (seconds until then) or its timeout (answer None)."""
    seconds = seconds_until(check, timeout)
    return Observation(
        moment, question, True if seconds is not None else None, round(seconds if seconds is not None else timeout, 3)
    )


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM takes the same path as Ctrl-C, so the revert in `finally` runs."""

    def raise_interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_fault(
    env: Env,
    step: ResolvedStep,
    *,
    journal: Journal,
    emit: Emit = ignore,
    stop: threading.Event | None = None,
    on_injected: Callable[[], None] | None = None,
    on_effect: Callable[[], None] | None = None,
    on_revert: Callable[[], None] | None = None,
) -> FaultResult:
    """Run one resolved step end to end. Setting `stop` (Ctrl-C in another thread) cuts the hold short; revert still
    runs. `on_injected`, `on_effect` and `on_revert` are called as the fault is injected, seen to hold, and about to
    be reverted.

    What went wrong is in the result: `errors` when the system deviated, `failures` when chaoskit could not arm,
    inject or revert (a failed revert is left to the switch, which keeps retrying on the node).
    """
    run = _Injection(env, step, journal, tapped(emit) if emit is ignore else emit)
    if not run.arm():
        return run.result
    try:
        run.inject()
        if on_injected is not None:
            on_injected()  # e.g. a diagnosis that may look before a slow symptom shows: a cause often shows sooner
        if run.effect_seen() and on_effect is not None:
            on_effect()  # while the fault holds: e.g. the diagnosis taken "during"
        run.hold(stop or threading.Event())
    except (InjectError, HandoffError) as exc:
        run.result.failures.append(str(exc))
    except ChaoskitError as exc:
        run.result.errors.append(str(exc))
    finally:
        if on_revert is not None:
            on_revert()  # whatever looks "during" the fault stops looking
        reverted = run.revert()
    if reverted and run.injected:  # else nothing to wait for: broken until the switch or a user heals it, or never
        run.recover()
    return run.result


class _Injection:
    """One step's way through the engine: journaled, armed, injected, held, reverted, recovered; what it saw goes
    into `result`."""

    def __init__(self, env: Env, step: ResolvedStep, journal: Journal, emit: Emit) -> None:
        self.env, self.step, self.journal, self.emit = env, step, journal, emit
        self.fault, self.node, self.plan = step.fault, step.node.name, step.plan
        self.result = FaultResult(self.fault.name, self.node, new_injection_id(), self.plan.summary)
        self.switch = Switch(
            self.result.injection_id,
            step.node,
            self.plan.revert,
            step.deadline,
            fault=self.fault.name,
            run=str(journal.path),
        )
        self.injected, self.injected_at = False, time.monotonic()

    def arm(self) -> bool:
        """The revert journaled, then armed inside the node: from here on the node heals itself."""
        inj_id, node, step = self.result.injection_id, self.node, self.step
        params = step.params.model_dump(mode="json")
        deadline = time.time() + step.deadline
        self.journal.injection(
            Injection(
                inj_id,
                self.fault.name,
                node,
                self.plan.revert,
                deadline,
                params,
                lock=step.lock,
                verify=self.plan.verify,
            )
        )
        kill_point("journaled")
        try:
            arm(self.env.nodes, self.switch)  # before the first apply line
        except ChaoskitError as exc:
            self.env.nodes.run(step.node, self.switch.disarm_argv(), check=False)  # whatever part of it was installed
            self.journal.append("reverted", id=inj_id, note="nothing applied: arming the dead-man switch failed")
            self.result.failures.append(f"could not arm the dead-man switch on {node}, so nothing was injected: {exc}")
            return False
        self.emit(Armed(self.switch.unit, node, self.env.nodes.via, step.deadline, step=step.name))
        kill_point("armed")
        return True

    def inject(self) -> None:
        """The setup lines, the effect check asked where it must say no, the handoffs, then the apply lines."""
        fault, node, plan, env = self.fault, self.node, self.plan, self.env
        for line in plan.setup:  # what the checks read, made before they are first asked; it breaks nothing
            done = env.nodes.run(self.step.node, ["sh", "-c", line], check=False)
            if done.returncode != 0:
                raise InjectError(
                    f"{fault.name} on {node}: setting up `{line}` failed (exit {done.returncode}): {done.output}"
                )
        before = ask_once("before", "took_effect", lambda: fault.took_effect(env, plan))
        self.result.observations.append(before)
        if before.answer is None:
            raise InjectError(
                f"fact check inconclusive: the effect check of {fault.name} on {node} could not answer "
                f"before the injection ({before.detail}); nothing was injected"
            )
        if before.answer:
            raise InjectError(
                f"fact check inconclusive: {SAID[('before', 'took_effect')]} ({fault.name} on {node}):"
                " it cannot tell this fault from the cluster's state; nothing was injected"
            )
        hand_over(env, plan, self.step.nodes)  # files made on another node (a certificate signed where the CA key is)
        self.injected = True
        for i, line in enumerate(plan.apply, 1):
            done = env.nodes.run(self.step.node, ["sh", "-c", line], check=False)
            if done.returncode != 0:
                raise InjectError(f"{fault.name} on {node}: `{line}` failed (exit {done.returncode}): {done.output}")
            kill_point(f"applied-{i}")
        self.injected_at = time.monotonic()  # the hold counts from here: a restart in the apply lines is not held
        self.emit(Injected(fault.name, node, plan.summary, step=self.step.name))

    def effect_seen(self) -> bool:
        """The effect check polled until yes; then the recovery check asked once, where it must say no."""
        fault, plan, env, result = self.fault, self.plan, self.env, self.result
        effect = polled("after", "took_effect", lambda: fault.took_effect(env, plan), fault.effect_timeout)
        result.observations.append(effect)
        result.effect_s = effect.seconds if effect.answer else None
        if result.effect_s is None:
            result.errors.append(f"no effect of {fault.name} observed within {fault.effect_timeout:.0f}s")
            return False
        self.emit(EffectObserved(fault.name, result.effect_s, step=self.step.name))
        during = ask_once("during", "recovered", lambda: fault.recovered(env, plan))
        result.observations.append(during)
        if during.answer:
            result.failures.append(
                f"fact check inconclusive: {SAID[('during', 'recovered')]} ({fault.name} on "
                f"{self.node}): its recovery check is blind to this fault"
            )
        unreverted = ask_once("during", "reverted", self._verified)
        result.observations.append(unreverted)
        if unreverted.answer is not False:
            result.failures.append(
                f"fact check inconclusive: {SAID[('during', 'reverted')]} ({fault.name} on {self.node}"
                f"{': ' + unreverted.detail if unreverted.detail else ''}): its revert could say reverted while it "
                "holds"
            )
        kill_point("holding")
        return True

    def _verified(self) -> bool:
        """Whether the plan's verify lines all pass on the node now (each bounded: a hung tool is no answer)."""
        for line in self.plan.verify:
            argv = verify_argv(line, VERIFY_TIMEOUT_S)
            done = self.env.nodes.run(self.step.node, argv, check=False, timeout=VERIFY_TIMEOUT_S + 15)
            if done.returncode in (124, 125):  # timed out, or the way into the node failed: no answer
                raise ToolError(f"a verify line gave no answer (exit {done.returncode}): {line[:120]}")
            if done.returncode != 0:
                return False
        return True

    def hold(self, stop: threading.Event) -> None:
        """Wait out the hold, asking the effect check every `hold_watch` seconds and at its end: a fault the cluster
        healed meanwhile (kubelet restarting a frozen process) is recorded as held only as long as it was seen. It
        takes two noes in a row (the second asked at once when the first is the hold's last look): one no from a
        check that samples a moment (a flushed rule caught between two re-flushes) is no end of the hold."""
        every, first_no = self.fault.hold_watch, None
        while (remaining := self.step.duration - (time.monotonic() - self.injected_at)) > 0:
            if stop.wait(min(every or remaining, remaining)):
                self.result.errors.append(INTERRUPTED)
                return
            if every is None or self.result.stopped_holding_s is not None:
                continue
            if not self._stopped_holding():
                first_no = None
                continue
            if first_no is None:  # one no: confirmed by the next look, or at once when this was the last
                first_no = round(time.monotonic() - self.injected_at, 1)
                if time.monotonic() - self.injected_at < self.step.duration:
                    continue
                if stop.wait(CHECK_INTERVAL) or not self._stopped_holding():
                    continue
            self.result.stopped_holding_s = first_no
            self.emit(StoppedHolding(self.fault.name, self.node, first_no, step=self.step.name))

    def _stopped_holding(self) -> bool:
        """Whether the effect check says no now, asked for no longer than the hold has left (HOLD_LOOK_S at least):
        a check that hangs (the API server stalled) is no answer, and never stretches the hold."""
        said: list[bool] = []

        def ask() -> None:
            try:
                said.append(not self.fault.took_effect(self.env, self.plan))
            except ChaoskitError:
                pass  # an error is no answer: not a "stopped"

        left = self.step.duration - (time.monotonic() - self.injected_at)
        looking = threading.Thread(target=ask, name="chaoskit-hold-watch", daemon=True)
        looking.start()
        looking.join(max(left, HOLD_LOOK_S))
        return bool(said) and said[0]

    def revert(self) -> bool:
        """The switch's revert run now; a failure leaves it to the switch, which keeps retrying on the node."""
        fault, node, result = self.fault, self.node, self.result
        result.held_s = time.monotonic() - self.injected_at if self.injected else 0.0
        if result.stopped_holding_s is not None:  # the hold actually observed
            result.held_s = min(result.held_s, result.stopped_holding_s)
        self.emit(Reverting(fault.name, node, result.held_s, step=self.step.name))  # watchers: the hold is over
        try:
            heal(self.env.nodes, self.switch)
        except ChaoskitError as exc:
            rearmed = not isinstance(exc, NotRearmed)
            self.journal.append("revert-failed", id=result.injection_id, error=str(exc), rearmed=rearmed)
            retried = (
                f"the dead-man switch {self.switch.unit} retries it on the node for up to {RETRY_FOR_S // 60} min, or"
                if rearmed
                else "nothing retries it on the node (the dead-man switch could not be armed again):"
            )
            result.failures.append(
                f"{fault.name} on {node} not reverted: its revert failed ({exc}); {retried} run: chaoskit revert "
                f"{self.journal.path}"
            )
            return False
        self.journal.append("reverted", id=result.injection_id)
        self.emit(Reverted(fault.name, node, step=self.step.name))
        return True

    def recover(self) -> None:
        fault, plan, env, result = self.fault, self.plan, self.env, self.result
        recovery = polled("after", "recovered", lambda: fault.recovered(env, plan), fault.recovery_timeout)
        result.observations.append(recovery)
        result.recovery_s = recovery.seconds if recovery.answer else None
        if result.recovery_s is None:
            result.errors.append(
                f"{fault.component} did not recover within {fault.recovery_timeout:.0f}s of the revert"
            )
        else:
            self.emit(Recovered(fault.component, result.recovery_s, step=self.step.name))


@dataclass
class RevertOutcome:
    reverted: list[Injection] = field(default_factory=list)
    left: list[tuple[Injection, str]] = field(default_factory=list)  # with the error that kept each
    # journaled reverted, yet a verify line says the fault holds (or cannot say): with what it said
    held: list[tuple[Injection, str]] = field(default_factory=list)
    verified: list[Injection] = field(default_factory=list)  # journaled reverted, and their verify lines agree
    restored: list[str] = field(default_factory=list)  # changes to the user's objects put back, in words
    unrestored: list[str] = field(default_factory=list)  # changes to the user's objects not put back (the errors)


def revert_journal(env: Env, journal: Journal, say: Callable[[str], None] = lambda _: None) -> RevertOutcome:
    """Try to undo every injection a (dead) run left unreverted; a failure is journaled and the rest still tried.

    The component locks that run held are released for what was reverted (they would otherwise hold until its
    deadlines); a component with an injection left keeps its lock.
    """
    out = RevertOutcome()
    verify_again = journal.reverted()  # before this revert adds to them: what it heals was verified just now
    for inj in journal.pending():
        switch = Switch(inj.id, named(inj.node), inj.revert, 0, fault=inj.fault, run=str(journal.path))
        try:
            heal(env.nodes, switch)
        except ChaoskitError as exc:
            rearmed = not isinstance(exc, NotRearmed)
            journal.append("revert-failed", id=inj.id, error=str(exc), by="chaoskit revert", rearmed=rearmed)
            retried = (
                "its dead-man switch retries it" if rearmed else "nothing retries it: its switch could not be armed"
            )
            say(f"{inj.fault} on {inj.node} ({inj.id}) not reverted ({retried}): {exc}")
            out.left.append((inj, str(exc)))
            continue
        journal.append("reverted", id=inj.id, by="chaoskit revert")
        say(f"reverted {inj.fault} on {inj.node} ({inj.id})")
        out.reverted.append(inj)
    for inj in verify_again:
        _verify_again(env, inj, out, say)
    try:
        out.restored = subjects.put_back(env.kube, journal)
        for what in out.restored:
            say(f"put back: {what}")
    except ChaoskitError as exc:
        say(f"could not put back what the run changed: {exc}")
        out.unrestored.append(str(exc))
    started = [e.data for e in journal.entries() if e.kind == "run-started" and "run_id" in e.data]
    still_broken = {i.lock_name for i, _ in out.left + out.held}
    # every lock of the run whose faults are all healed, by whoever healed them: a run killed just after its own
    # revert (before it let go of its lock) leaves nothing pending, and its lock held until the lease runs out
    every = {Injection.from_data(e.data).lock_name for e in journal.entries() if e.kind == "injection"}
    freed = sorted(every - still_broken)
    if started and freed:
        # the holder as the run wrote it: the reverting process may be another host's, or another operator pod's
        release_run_locks(env.kube, started[-1].get("holder") or holder_id(started[-1]["run_id"]), freed)
    return out


def _verify_again(env: Env, inj: Injection, out: RevertOutcome, say: Callable[[str], None]) -> None:
    """Ask an injection journaled reverted its verify lines again: a fault found holding is reported, not healed (its
    component may be another run's by now)."""
    for line in inj.verify:
        if (failed := run_line(env.nodes, named(inj.node), line)) is not None:
            say(f"{inj.fault} on {inj.node} ({inj.id}) still holds, though journaled reverted: {failed}")
            out.held.append((inj, str(failed)))
            return
    out.verified.append(inj)
