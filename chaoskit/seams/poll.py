"""Waiting for a condition: the one polling loop behind `Kube.wait`, the engine's effect and recovery checks, the
runner's checks and the cluster's own start-up waits."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from chaoskit.errors import ToolError

T = TypeVar("T")


@dataclass(frozen=True)
class Polled(Generic[T]):
    """How a wait ended: check()'s first truthy answer and when, or the timeout and the last error it raised."""

    done: bool
    value: T | None  # check()'s first truthy answer; None at timeout
    seconds: float  # from the first call of check() to its truthy answer, or to giving up
    last_error: str = ""  # the last tolerated error check() raised ("" if none)


def poll(
    check: Callable[[], T],
    timeout: float,
    interval: float,
    *,
    tolerate: tuple[type[Exception], ...] = (ToolError,),
) -> Polled[T]:
    """Call check() every `interval` seconds until it returns something truthy or `timeout` has passed.

    Errors of the `tolerate` types count as "not yet" (an API server that is briefly away must not end a wait);
    any other error propagates. check() always runs at least once.
    """
    start = time.monotonic()
    last_error = ""
    while True:
        try:
            if result := check():
                return Polled(True, result, time.monotonic() - start)
        except tolerate as exc:
            last_error = str(exc)
        elapsed = time.monotonic() - start
        if elapsed >= timeout:
            return Polled(False, None, elapsed, last_error)
        time.sleep(interval)
