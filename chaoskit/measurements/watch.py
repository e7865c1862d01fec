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


CALIBRATION_WRITES = 5  # writes timed per measurement: enough for a max that says what one write may take
CALIBRATION_NAMESPACE = "kube-system"  # always there; nothing of the user's is written


@dataclass(frozen=True)
class WatchDelay:
    """How late a watch event reaches chaoskit on this cluster, measured: per write of a probe ConfigMap, from the
    moment the write was sent (the object changed no earlier) to the moment its event arrived. The largest is how far
    a watch-stamped moment may lie after what it stamps: the precision of every watch-stamped stage end."""

    samples: tuple[float, ...]

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
            "clock_resolution_s": CLOCK_RESOLUTION,
        }


def measure_watch_delay(kube: Kube, writes: int = CALIBRATION_WRITES, timeout: float = 10.0) -> WatchDelay:
    """Write a probe ConfigMap `writes` times under a watch and time each event (the ConfigMap deleted after)."""
    name = f"chaoskit-watch-probe-{uuid.uuid4().hex[:8]}"
    path = f"/api/v1/namespaces/{CALIBRATION_NAMESPACE}/configmaps"
    received: dict[str, float] = {}
    arrived = threading.Condition()
    stop = threading.Event()

    def on_event(kind: str, obj: Obj, at: float) -> None:
        with arrived:
            received.setdefault(str((obj.get("data") or {}).get("n")), at)
            arrived.notify_all()

    watcher = Watcher(kube, path, on_event, stop, fieldSelector=f"metadata.name={name}").start()
    samples: list[float] = []
    try:
        if not watcher.wait_listed(timeout):
            return WatchDelay(())
        for n in range(writes):
            obj = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "data": {"n": str(n)},
                "metadata": {
                    "name": name,
                    "namespace": CALIBRATION_NAMESPACE,
                    "labels": {"app.kubernetes.io/managed-by": "chaoskit"},
                },
            }
            sent = time.time()
            kube.apply(obj)
            with arrived:
                if arrived.wait_for(lambda n=n: str(n) in received, timeout):  # type: ignore[misc]
                    samples.append(received[str(n)] - sent)
    finally:
        stop.set()
        kube.delete(f"{path}/{name}", propagation="Background")
        watcher.join()
    return WatchDelay(tuple(samples))


def calibrated(kube: Kube, result: MeasurementResult) -> WatchDelay:
    """The watch delay measured for one measurement, kept in its result (extra["watch_delay"]) and said in a note."""
    delay = measure_watch_delay(kube)
    result.extra["watch_delay"] = delay.to_dict()
    result.notes.append(
        f"watch-stamped ends are at most {delay.max * 1000:.0f} ms late (measured: {len(delay.samples)} writes timed "
        f"to their watch events); the clock's resolution is {CLOCK_RESOLUTION * 1000:g} ms"
        if delay.samples
        else "the watch delay could not be measured: watch-stamped ends carry the clock's resolution"
    )
    return delay
