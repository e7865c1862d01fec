"""What a tracking measurement observes the cluster with: its API watches and in-node probes, started and stopped
together, each observation handed to its tracker under one lock (the watch and probe threads would race in it)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from chaoskit.figures import seconds
from chaoskit.measurements.base import MissingPiece
from chaoskit.measurements.probe import NodeProbe
from chaoskit.measurements.watch import Handler, Obj, Watcher
from chaoskit.model.timeline import Gap

LISTED_WITHIN = 30.0  # seconds each watch may take to list what is there before the measurement counts as started
T = TypeVar("T")


class Observers:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.watchers: list[Watcher] = []
        self.probes: list[NodeProbe] = []

    def locked(self, handler: Handler) -> Handler:
        """`handler` (a tracker's watch input) called under the lock."""

        def call(kind: str, obj: Obj, at: float) -> None:
            with self.lock:
                handler(kind, obj, at)

        return call

    def locked_one(self, handler: Callable[[T], None]) -> Callable[[T], None]:
        """`handler` (a tracker's probe input) called under the lock."""

        def call(seen: T) -> None:
            with self.lock:
                handler(seen)

        return call

    def start(self) -> None:
        """Every watch and probe started; returns once each watch has listed, so that a change made right after
        cannot hide in an initial list."""
        for w in self.watchers:
            w.start()
        for probe in self.probes:
            probe.start()
        for w in self.watchers:
            if not w.wait_listed(LISTED_WITHIN):
                raise MissingPiece(f"could not list {w.path} within {seconds(LISTED_WITHIN)}: {w.gaps or 'no answer'}")

    def settle(self, in_flight: Callable[[], int], within: float) -> tuple[float, int]:
        """Wait (up to `within` seconds) while the tracker says something is still on its way: how long it waited,
        and how much was still on its way then."""
        t0, left = time.monotonic(), 0
        while time.monotonic() < t0 + within:
            with self.lock:
                if not (left := in_flight()):
                    break
            time.sleep(0.5)
        return time.monotonic() - t0, left

    def stop(self) -> None:
        self.stop_event.set()
        for probe in self.probes:  # inside the node first: a `docker exec` session's processes outlive its client
            probe.stop()
        for w in self.watchers:
            w.join()

    @property
    def gaps(self) -> list[Gap]:
        return [g for w in self.watchers for g in w.gaps]
