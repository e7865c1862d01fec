"""A watch that survives the API server: list, then watch from that resourceVersion, handing every event over
with the time *we* received it (ms, unlike the objects' own 1 s timestamps).

When the stream breaks (the API server restarts, a fault drops etcd) it keeps re-listing until the API answers
again and records the blind stretch as a Gap, so a measurement marks it instead of silently skipping it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chaoskit.errors import ToolError
from chaoskit.model.timeline import CLOCK_RESOLUTION, Gap, MeasurementResult
from chaoskit.seams.kube import Kube

Obj = dict[str, Any]
Handler = Callable[[str, Obj, float], None]  # (ADDED | MODIFIED | DELETED | LISTED, object, received at)
WATCH_WINDOW = 5  # seconds per watch request: bounds how long stop() waits for a quiet stream


class Watcher:
    def __init__(self, kube: Kube, path: str, on_event: Handler, stop: threading.Event, **query: str) -> None:
        self.kube, self.path, self.on_event, self.stop, self.query = kube, path, on_event, stop, query
        self.gaps: list[Gap] = []
        self.errors: list[str] = []
        self.listed = threading.Event()  # set once the first list is in: events from then on are ours
        self.thread = threading.Thread(target=self._run, name=f"watch {path}", daemon=True)

    def start(self) -> Watcher:
        self.thread.start()
        return self

    def wait_listed(self, timeout: float) -> bool:
        return self.listed.wait(timeout)

    def join(self) -> None:
        self.thread.join(timeout=WATCH_WINDOW + 5)

    def _run(self) -> None:
        down_since: float | None = None
        reason = ""
        while not self.stop.is_set():
            try:
                version = self._list()
                if down_since is not None:
                    self.gaps.append(Gap(down_since, time.time(), reason))
                    down_since = None
                self._watch(version)
            except Exception as exc:  # the API server went away or the version expired: re-list
                if down_since is None:
                    down_since, reason = time.time(), f"watch {self.path} broke: {type(exc).__name__}: {exc}"[:300]
                self.stop.wait(0.5)
        if down_since is not None:
            self.gaps.append(Gap(down_since, time.time(), reason + " (still down when the measurement stopped)"))

    def _list(self) -> str:
        listing = self.kube.get(self.path, **self.query)
        now = time.time()
        for obj in listing.get("items", []):
            self.on_event("LISTED", obj, now)
        self.listed.set()
        return str(listing.get("metadata", {}).get("resourceVersion", ""))

    def _watch(self, version: str) -> None:
        while not self.stop.is_set():
            for kind, obj in self.kube.events(self.path, WATCH_WINDOW, resourceVersion=version, **self.query):
                if kind == "ERROR":  # 410 Gone: our version is too old
                    raise RuntimeError(f"watch error: {obj.get('message', obj)}")
                self.on_event(kind, obj, time.time())
                version = str(obj.get("metadata", {}).get("resourceVersion", version))
                if self.stop.is_set():
                    return


CALIBRATION_WRITES = 5  # writes timed before the measurement counts as started: a figure from the first moment
SAMPLE_EVERY = 1.0  # s between the writes timed while the measurement runs: its busy moments are what precision is for
WRITE_WAIT = 2.0  # s one timed write may take to show on the watch; beyond it (the API server away) it is no sample
CALIBRATION_NAMESPACE = "kube-system"  # always there; nothing of the user's is written


@dataclass(frozen=True)
class WatchDelay:
    """How late a watch event reaches chaoskit on this cluster, measured: per write of a probe ConfigMap, from the
    moment the object changed at the earliest to the moment its event arrived. The largest is how far a watch-stamped
    moment may lie after what it stamps: the precision of every watch-stamped stage end.

    The object changed after the write was sent, and before its answer left the API server: no earlier than the
    answer's arrival less the last leg of a write, which the fastest whole write bounds. So a write the API server was
    slow to make (admission, etcd) counts for what came after it, not for the wait before."""

    samples: tuple[float, ...]
    missed: int = 0  # writes whose event never came within the wait: each is among `samples`, at the wait

    @property
    def max(self) -> float:
        return max(self.samples) if self.samples else CLOCK_RESOLUTION

    def to_dict(self) -> dict[str, Any]:
        ordered = sorted(self.samples)
        median = round(ordered[len(ordered) // 2], 4) if ordered else None
        return {
            "writes": len(self.samples),
            "median_s": median,
            "max_s": round(self.max, 4),
            "missed": self.missed,
            "clock_resolution_s": CLOCK_RESOLUTION,
        }

    def note(self) -> str:
        if not self.samples:
            return "the watch delay could not be measured: watch-stamped ends carry the clock's resolution"
        missed = (
            f"; {self.missed} of them never seen on the watch within {self.max:g} s, counted at that bound"
            if self.missed
            else ""
        )
        return (
            f"watch-stamped ends are at most {self.max * 1000:.0f} ms late (measured: {len(self.samples)} writes "
            f"timed to their watch events over the run, median {self.to_dict()['median_s'] * 1000:.0f} ms{missed}); "
            f"the clock's resolution is {CLOCK_RESOLUTION * 1000:g} ms"
        )


class WatchDelaySampler:
    """Times writes of a probe ConfigMap to their watch events for as long as a measurement runs: CALIBRATION_WRITES
    at its start, then one every SAMPLE_EVERY s until finish(). A quiet start alone under-states it: in CI, five
    writes at the start measured 6 ms, and the taint of a lost node reached us at least 56 ms after the controller
    that acts on it."""

    def __init__(self, kube: Kube, every: float = SAMPLE_EVERY, wait: float = WRITE_WAIT) -> None:
        self.kube, self.every, self.wait = kube.bounded((wait, wait)), every, wait
        self.name = f"chaoskit-watch-probe-{uuid.uuid4().hex[:8]}"
        self.path = f"/api/v1/namespaces/{CALIBRATION_NAMESPACE}/configmaps"
        self.received: dict[str, float] = {}
        self.arrived = threading.Condition()
        self.stop = threading.Event()
        self.samples: list[float] = []
        self.missed = 0  # writes the API server answered whose event never came within `wait`
        self.watcher = Watcher(kube, self.path, self._event, self.stop, fieldSelector=f"metadata.name={self.name}")
        self.thread = threading.Thread(target=self._keep_sampling, name="watch delay", daemon=True)
        self.writes = 0
        self.fastest = float("inf")  # s: the quickest write's round trip, which bounds any write's last leg

    def start(self, writes: int = CALIBRATION_WRITES, listed_within: float = 10.0) -> WatchDelaySampler:
        self.watcher.start()
        if self.watcher.wait_listed(listed_within):
            for _ in range(writes):
                self._time_one()
            self.thread.start()
        return self

    def finish(self, result: MeasurementResult | None = None) -> WatchDelay:
        """Stop sampling and clean up; the delay over the whole run, kept in `result` (extra and a note)."""
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=self.wait + 1)
        try:
            self.kube.delete(f"{self.path}/{self.name}", propagation="Background")
        except ToolError:
            pass  # the API server away: the probe ConfigMap (labelled managed-by chaoskit) is left in kube-system
        self.watcher.join()
        delay = WatchDelay(tuple(self.samples), self.missed)
        if result is not None:
            result.extra["watch_delay"] = delay.to_dict()
            result.notes.append(delay.note())
        return delay

    def _event(self, kind: str, obj: Obj, at: float) -> None:
        with self.arrived:
            self.received.setdefault(str((obj.get("data") or {}).get("n")), at)
            self.arrived.notify_all()

    def _keep_sampling(self) -> None:
        while not self.stop.wait(self.every):
            self._time_one()

    def _time_one(self) -> None:
        n = str(self.writes)
        self.writes += 1
        obj = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "data": {"n": n},
            "metadata": {
                "name": self.name,
                "namespace": CALIBRATION_NAMESPACE,
                "labels": {"app.kubernetes.io/managed-by": "chaoskit"},
            },
        }
        sent = time.time()
        try:
            self.kube.apply(obj)
        except ToolError:
            return  # the API server refused or did not answer in time: a fault at work, not a watch delay
        answered = time.time()
        self.fastest = min(self.fastest, answered - sent)
        changed = max(sent, answered - self.fastest)  # the earliest the object can have changed
        with self.arrived:
            if self.arrived.wait_for(lambda: n in self.received, self.wait):
                self.samples.append(max(0.0, self.received[n] - changed))
            elif not self.stop.is_set():  # written, never seen: a watch at least this late, not a missing sample
                self.missed += 1
                self.samples.append(self.wait)
