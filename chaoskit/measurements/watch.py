"""A watch that survives the API server: list, then watch from that resourceVersion, handing every event over
with the time *we* received it (ms, unlike the objects' own 1 s timestamps).

When the stream breaks (the API server restarts, a fault drops etcd) it keeps re-listing until the API answers
again and records the blind stretch as a Gap, so a measurement marks it instead of silently skipping it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from chaoskit.cluster.kube import Kube
from chaoskit.model.timeline import Gap

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
