"""A diagnosis's time budget: one deadline that caps every wait, and calls run on a leash so that a hung API server,
etcd or node costs at most the budget, never the sum of its timeouts."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
STOP_POLL_S = 0.1  # how often a leashed wait asks whether to stop


class Budget:
    """Seconds left until a deadline, on a clock that tests can replace."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self.clock = seconds, clock
        self.deadline = clock() + seconds

    def remaining(self) -> float:
        return max(0.0, self.deadline - self.clock())

    def cap(self, timeout: float) -> float:
        """`timeout`, or less when the deadline comes sooner."""
        return min(timeout, self.remaining())


UNLIMITED = Budget(float("inf"))


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What a leashed call gave: its value, the exception it raised, or nothing yet (it was still running)."""

    value: T | None = None
    error: BaseException | None = None
    finished: bool = True


def leashed(
    calls: Sequence[Callable[[], T]],
    timeout: float,
    name: str = "chaoskit-leashed",
    stop: Callable[[], bool] | None = None,
) -> list[Outcome[T]]:
    """Run every call at once, each in a thread of its own, and wait at most `timeout` seconds for them all, or
    until `stop` says there is no point (looked at every STOP_POLL_S: an API read stops once the API is known gone).

    A call still running then is reported unfinished and left behind: its thread is a daemon, so a read stuck on a
    frozen process does not keep chaoskit from exiting.
    """
    boxes: list[list[Outcome[T]]] = [[] for _ in calls]

    def run(call: Callable[[], T], box: list[Outcome[T]]) -> None:
        try:
            box.append(Outcome(call()))
        except BaseException as exc:  # handed to the caller's thread through the box
            box.append(Outcome(error=exc))

    threads = [
        threading.Thread(target=run, args=(c, b), name=name, daemon=True) for c, b in zip(calls, boxes, strict=True)
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        while t.is_alive() and (left := deadline - time.monotonic()) > 0 and not (stop is not None and stop()):
            t.join(min(left, STOP_POLL_S) if stop is not None else left)
    return [box[0] if box else Outcome(finished=False) for box in boxes]
