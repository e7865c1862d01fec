"""The run loop for one fault: journal → arm the dead-man switch → inject → confirm the effect → hold →
revert (always: success, failure, Ctrl-C, SIGTERM) → confirm recovery.

SIGKILL cannot be caught: the switch armed inside the node heals it at the deadline instead.
"""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType

from pydantic import BaseModel

from chaoskit.cluster.kube import KubeError
from chaoskit.errors import ChaoskitError, ToolError
from chaoskit.faults.base import Env, Fault, FaultPlan
from chaoskit.faults.deadman import Switch, arm, heal
from chaoskit.journal import Injection, Journal, component_of
from chaoskit.safety import release_run_locks

# The switch fires this long after the planned revert at the latest, unless the playbook says otherwise.
DEFAULT_DEADLINE_MARGIN = 60.0


class InjectError(ToolError):
    pass


class RevertError(ToolError):
    pass


@dataclass
class FaultResult:
    fault: str
    node: str
    injection_id: str
    summary: str
    effect_s: float | None = None  # inject -> effect observed
    held_s: float = 0.0
    recovery_s: float | None = None  # revert -> component healthy again
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and self.effect_s is not None and self.recovery_s is not None


def new_injection_id() -> str:
    return uuid.uuid4().hex[:12]


def poll(check: Callable[[], bool], timeout: float, interval: float = 0.5) -> float | None:
    """Seconds until check() is true, or None at timeout; API errors count as 'not yet'."""
    start = time.monotonic()
    while True:
        try:
            if check():
                return time.monotonic() - start
        except (KubeError, ToolError):
            pass
        if time.monotonic() - start >= timeout:
            return None
        time.sleep(interval)


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
    fault: Fault,
    node: str,
    params: BaseModel,
    *,
    duration: float,
    journal: Journal,
    deadline: float | None = None,
    say: Callable[[str], None] = lambda _: None,
    stop: threading.Event | None = None,
    on_effect: Callable[[], None] | None = None,
) -> FaultResult:
    """Run one fault end to end. Setting `stop` (Ctrl-C in another thread) cuts the hold short; revert still runs."""
    plan: FaultPlan = fault.plan(node, params)
    deadline = deadline if deadline is not None else duration + DEFAULT_DEADLINE_MARGIN
    inj_id = new_injection_id()
    result = FaultResult(fault.name, node, inj_id, plan.summary)
    switch = Switch(inj_id, node, plan.revert, deadline)
    journal.injection(
        Injection(inj_id, fault.name, node, plan.revert, time.time() + deadline, params.model_dump(mode="json"))
    )
    arm(env.nodes, switch)  # before the first apply line: from here on the node heals itself
    say(f"armed dead-man switch {switch.unit} on {node} (fires in {deadline:.0f}s)")
    injected_at = time.monotonic()
    try:
        for line in plan.apply:
            done = env.nodes.run(node, ["sh", "-c", line], check=False)
            if done.returncode != 0:
                raise InjectError(f"{fault.name} on {node}: `{line}` failed (exit {done.returncode}): {done.output}")
        say(f"injected {fault.name} on {node}: {plan.summary}")
        result.effect_s = poll(lambda: fault.took_effect(env, plan), fault.effect_timeout)
        if result.effect_s is None:
            result.errors.append(f"no effect of {fault.name} observed within {fault.effect_timeout:.0f}s")
        else:
            say(f"effect observed after {result.effect_s:.1f}s")
            if on_effect is not None:
                on_effect()  # while the fault holds: e.g. the diagnosis taken "during"
        remaining = duration - (time.monotonic() - injected_at)
        if remaining > 0 and (stop or threading.Event()).wait(remaining):
            result.errors.append("interrupted while holding the fault")
    except ChaoskitError as exc:
        result.errors.append(str(exc))
    finally:
        result.held_s = time.monotonic() - injected_at
        try:
            heal(env.nodes, switch)
            journal.append("reverted", id=inj_id)
            say(f"reverted {fault.name} on {node}")
        except ChaoskitError as exc:
            journal.append("revert-failed", id=inj_id, error=str(exc))
            raise RevertError(
                f"revert of {fault.name} on {node} failed ({exc}); the dead-man switch {switch.unit} "
                f"still heals it by the deadline, or run: chaoskit revert {journal.path}"
            ) from exc
    result.recovery_s = poll(lambda: fault.recovered(env, plan), fault.recovery_timeout)
    if result.recovery_s is None:
        result.errors.append(f"{fault.component} did not recover within {fault.recovery_timeout:.0f}s of the revert")
    else:
        say(f"{fault.component} healthy again {result.recovery_s:.1f}s after the revert")
    return result


def revert_journal(env: Env, journal: Journal, say: Callable[[str], None] = lambda _: None) -> list[str]:
    """Undo every injection a (dead) run left unreverted, then release the component locks that run held (they
    would otherwise hold until its deadlines); returns the ids reverted."""
    pending = journal.pending()
    done: list[str] = []
    for inj in pending:
        heal(env.nodes, Switch(inj.id, inj.node, inj.revert, 0))
        journal.append("reverted", id=inj.id, by="chaoskit revert")
        say(f"reverted {inj.fault} on {inj.node} ({inj.id})")
        done.append(inj.id)
    run_ids = [e.data["run_id"] for e in journal.entries() if e.kind == "run-started" and "run_id" in e.data]
    if run_ids and pending:
        release_run_locks(env.kube, run_ids[-1], sorted({component_of(i.fault) for i in pending}))
    return done
