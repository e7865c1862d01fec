"""The watch delay a measurement stamps its watch-stamped ends with: measured on the cluster at hand, never assumed."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from typing import Any

from chaoskit.measurements.watch import measure_watch_delay
from chaoskit.model.timeline import CLOCK_RESOLUTION
from chaoskit.seams.kube import FakeKube, Obj


class SlowWatchKube(FakeKube):
    """Every write shows up on the watch `lag` seconds after it was made (or never, with lag None)."""

    def __init__(self, lag: float | None) -> None:
        super().__init__({"/api/v1/namespaces/kube-system/configmaps/other": {"metadata": {"name": "other"}}})
        self.lag = lag
        self.written: queue.Queue[tuple[float, Obj]] = queue.Queue()

    def apply(self, obj: Obj) -> Any:
        self.written.put((time.time(), obj))
        return super().apply(obj)

    def events(self, path: str, timeout: float, **query: str) -> Iterator[tuple[str, Obj]]:
        end = time.time() + min(timeout, 0.5)
        while time.time() < end:
            try:
                at, obj = self.written.get(timeout=0.05)
            except queue.Empty:
                continue
            if self.lag is not None:
                time.sleep(max(0.0, at + self.lag - time.time()))
                yield "MODIFIED", obj


def test_the_watch_delay_is_what_each_write_took_to_reach_the_watch() -> None:
    kube = SlowWatchKube(lag=0.05)
    delay = measure_watch_delay(kube, writes=3, timeout=2.0)
    assert len(delay.samples) == 3 and all(0.05 <= s < 0.5 for s in delay.samples), delay
    assert delay.max > CLOCK_RESOLUTION, "the precision of a watch stamp is measured, not the clock's resolution"
    assert not [p for p in kube.objects if "chaoskit-watch-probe" in p], "the probe ConfigMap is deleted"
    assert delay.to_dict()["writes"] == 3 and delay.to_dict()["clock_resolution_s"] == CLOCK_RESOLUTION


def test_a_watch_that_delivers_nothing_measures_nothing_and_says_so() -> None:
    delay = measure_watch_delay(SlowWatchKube(lag=None), writes=2, timeout=0.3)
    assert delay.samples == () and delay.max == CLOCK_RESOLUTION
