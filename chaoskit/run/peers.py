"""The runs of one suite in progress, as each run sees the others: the nodes they break, the faults they hold, and
the diagnoses they share."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from chaoskit.diagnosers.kit.base import Diagnosis
from chaoskit.faults.base import Fault


class Peers:
    """The runs of one suite in progress: the nodes each one's faults reach and the faults held at this moment.

    A run's steady state does not judge the nodes another run is breaking, and its diagnosis during a fault looks for
    its own fault past the findings of the others' (both are recorded). Thread-safe: each run has its thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, frozenset[str]] = {}
        self._held: dict[str, tuple[Fault, str]] = {}  # step key -> (fault, node)
        self._diagnoses: list[_Diagnosing] = []  # those under way, and the latest finished

    def join(self, run_id: str, nodes: frozenset[str]) -> None:
        with self._lock:
            self._nodes[run_id] = nodes

    def leave(self, run_id: str) -> None:
        with self._lock:
            self._nodes.pop(run_id, None)

    def excused(self, run_id: str) -> set[str]:
        """Nodes the other runs in progress may be breaking."""
        with self._lock:
            return {n for run, nodes in self._nodes.items() if run != run_id for n in nodes}

    def hold(self, key: str, fault: Fault, node: str) -> None:
        with self._lock:
            self._held[key] = (fault, node)

    def drop(self, key: str) -> None:
        with self._lock:
            self._held.pop(key, None)

    def held_besides(self, key: str) -> list[tuple[Fault, str]]:
        """The faults held now by other steps (of this run or another), with their nodes."""
        with self._lock:
            return [held for k, held in self._held.items() if k != key]

    def diagnosis(self, after: float, collect: Callable[[], Diagnosis | None]) -> tuple[float, Diagnosis | None, bool]:
        """A diagnosis started after `after` (monotonic): another run's if one did (the finished one, else the one
        under way), or one this caller collects now; (when it started, what it found, whether this caller collected
        it). Runs holding faults at the same moment want the same picture of the cluster, and each diagnosis costs
        seconds of the host's CPU (a docker exec or an agent call per component and node, two scrapes of each); each
        run judges it against its own fault. One that started before `after` is of no use, and is not waited for."""
        with self._lock:
            fresh = [d for d in self._diagnoses if d.started > after]
            done = [d for d in fresh if d.done.is_set()]
            mine = not fresh
            if mine:
                ours = _Diagnosing(time.monotonic())
                self._diagnoses.append(ours)
            else:  # the newest finished, else the one under way that finishes first
                ours = max(done, key=lambda d: d.started) if done else min(fresh, key=lambda d: d.started)
        if not mine:
            ours.done.wait()
            return ours.started, ours.found, False
        try:
            ours.found = collect()
        finally:
            ours.done.set()
            with self._lock:
                latest = max((d for d in self._diagnoses if d.done.is_set()), key=lambda d: d.started)
                self._diagnoses = [d for d in self._diagnoses if d is latest or not d.done.is_set()]
        return ours.started, ours.found, True


@dataclass
class _Diagnosing:
    """One diagnosis of a suite: when it started, and what it found once done."""

    started: float
    found: Diagnosis | None = None
    done: threading.Event = field(default_factory=threading.Event)
