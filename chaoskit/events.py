"""What happens in a run, as typed events: the engine and the runner emit them, and whoever shows or follows a run
subscribes (the terminal prints their words, the operator posts Kubernetes events, `chaoskit run --events` writes
them as JSON lines for the tests and other tools). Nobody reads a run's progress back from its words.

    Event
    ├── Armed            the dead-man switch is armed inside the node: from here on the node heals itself
    ├── Injected         the fault's apply lines are done: the hold counts from here
    ├── EffectObserved   the fault's effect check said yes
    ├── Reverting        the hold is over: the revert starts
    ├── Reverted         the revert lines succeeded
    ├── Recovered        the component's recovery check said yes after the revert
    ├── Diagnosed        a diagnosis of every component (around the run, or while a fault holds)
    ├── SteadyState      a steady-state check, judged before or after the steps
    ├── Threshold        a threshold, judged on the measurements
    └── Said             anything else worth a line (the workload ready, a measurement started, ...)
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any, ClassVar

from chaoskit.figures import seconds


@dataclass(frozen=True)
class Event:
    """Something that happened in a run; `playbook` and `step` say where (empty: the run, or the suite)."""

    step: str = field(default="", kw_only=True)
    playbook: str = field(default="", kw_only=True)
    at: float = field(default_factory=time.time, kw_only=True)  # wall clock, when it happened
    reason: ClassVar[str] = "Progress"  # a Kubernetes event's reason, so `kubectl get events` can filter by it

    def words(self) -> str:
        """The event as a progress line (without the step and playbook: the subscriber places those)."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        return {"event": type(self).__name__, **dataclasses.asdict(self), "words": self.words()}


@dataclass(frozen=True)
class Armed(Event):
    reason = "Armed"
    unit: str
    node: str
    via: str  # how the node is reached: "docker exec", "chaoskit agent"
    fires_in_s: float

    def words(self) -> str:
        fires = seconds(self.fires_in_s)
        return f"armed dead-man switch {self.unit} on {self.node} through {self.via} (fires in {fires})"


@dataclass(frozen=True)
class Injected(Event):
    reason = "Injected"
    fault: str
    node: str
    summary: str

    def words(self) -> str:
        return f"injected {self.fault} on {self.node}: {self.summary}"


@dataclass(frozen=True)
class EffectObserved(Event):
    reason = "EffectObserved"
    fault: str
    after_s: float

    def words(self) -> str:
        return f"effect observed after {seconds(self.after_s)}"


@dataclass(frozen=True)
class StoppedHolding(Event):
    reason = "StoppedHolding"
    fault: str
    node: str
    after_s: float

    def words(self) -> str:
        return (
            f"{self.fault} on {self.node} stopped holding after {seconds(self.after_s)} (its effect check says no: the "
            "cluster healed it, or undid it)"
        )


@dataclass(frozen=True)
class Reverting(Event):
    reason = "Reverting"
    fault: str
    node: str
    held_s: float

    def words(self) -> str:
        return f"reverting {self.fault} on {self.node} after {seconds(self.held_s)} held"


@dataclass(frozen=True)
class Reverted(Event):
    reason = "Reverted"
    fault: str
    node: str

    def words(self) -> str:
        return f"reverted {self.fault} on {self.node}"


@dataclass(frozen=True)
class Recovered(Event):
    reason = "Recovered"
    component: str
    after_s: float

    def words(self) -> str:
        return f"{self.component} healthy again {seconds(self.after_s)} after the revert"


@dataclass(frozen=True)
class Diagnosed(Event):
    """A diagnosis: `when` it was taken, what failed; while a fault holds, whether it named the fault."""

    reason = "Diagnosis"
    when: str
    failing: tuple[str, ...] = ()  # "<component>@<subject>: <status>" of every report not ok
    seconds: float = 0.0
    named: bool | None = None  # while a fault holds: whether its component and cause were named
    component: str = ""  # the fault's, when `named` is not None
    cause: str = ""
    named_after_s: float | None = None
    shared: bool = False  # another run of the suite took it
    error: str = ""  # the diagnosis broke (it reports, it never fails a run)

    def words(self) -> str:
        if self.error:
            return f"diagnosis {self.when} failed: {self.error}"
        if self.named is not None:
            took = f" after {seconds(self.named_after_s)}" if self.named_after_s is not None else ""
            return f"diagnosis {'named' if self.named else 'did NOT name'} {self.component} ({self.cause}){took}"
        line = f"diagnosis {self.when}: {', '.join(self.failing) or 'every component ok'} ({seconds(self.seconds)})"
        return f"{line}, shared" if self.shared else line


@dataclass(frozen=True)
class SteadyState(Event):
    reason = "SteadyState"
    when: str  # before, after
    check: str
    ok: bool
    detail: str

    def words(self) -> str:
        return f"steady state {self.when}: {self.check} {'ok' if self.ok else 'FAILED'} ({self.detail})"


@dataclass(frozen=True)
class Threshold(Event):
    reason = "Threshold"
    measurement: str
    stat: str
    stage: str
    breached: bool
    detail: str

    def words(self) -> str:
        judged = "BREACHED" if self.breached else "ok"
        return f"threshold {self.measurement} {self.stat} {self.stage}: {judged} ({self.detail})"


@dataclass(frozen=True)
class Said(Event):
    text: str

    def words(self) -> str:
        return self.text


Emit = Callable[[Event], None]


def ignore(_: Event) -> None:
    """A subscriber that wants nothing."""


def speaking(say: Callable[[str], None], *, playbook: bool = True, step: bool = True) -> Emit:
    """A subscriber that says each event as a line: its playbook and its step first, unless told not to (a run of
    one playbook, or of one fault, has nothing to tell apart)."""
    return tapped(lambda event: say(line(event, playbook=playbook, step=step)))


def line(event: Event, *, playbook: bool = True, step: bool = True) -> str:
    """The event as one progress line: `playbook: [step] words`."""
    text = f"[{event.step}] {event.words()}" if event.step and step else event.words()
    return f"{event.playbook}: {text}" if event.playbook and playbook else text


def said(emit: Emit) -> Callable[[str], None]:
    """Free text as Said events."""
    return lambda text: emit(Said(text))


def stamped(emit: Emit, playbook: str) -> Emit:
    """Every event passed on with its playbook named."""
    return lambda event: emit(dataclasses.replace(event, playbook=playbook))


def fan_out(*subscribers: Emit) -> Emit:
    def emit(event: Event) -> None:
        for subscriber in subscribers:
            subscriber(event)

    return emit


TAP = "CHAOSKIT_EVENTS"  # a file every run and injection of this process appends its events to, as JSON lines
_taps: dict[str, JsonLines] = {}


def tapped(emit: Emit) -> Emit:
    """`emit`, and the CHAOSKIT_EVENTS file when that is set, so whoever starts chaoskit (a CI job, a test) follows
    every run and injection without a flag on each command: the terminal's subscriber taps (`speaking`), and so does a
    run or injection that nobody follows (`ignore`)."""
    path = os.environ.get(TAP)
    if not path:
        return emit
    if path not in _taps:
        _taps[path] = JsonLines(open(path, "a", encoding="utf-8"))  # noqa: SIM115 - kept open for the process's life
    return _taps[path] if emit is ignore else fan_out(emit, _taps[path])


class JsonLines:
    """A subscriber writing each event as a JSON line, flushed at once, so a reader follows the run as it goes."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()  # a suite's runs emit from their own threads

    def __call__(self, event: Event) -> None:
        text = json.dumps(event.to_dict(), default=str)
        with self._lock:
            self._stream.write(text + "\n")
            self._stream.flush()
