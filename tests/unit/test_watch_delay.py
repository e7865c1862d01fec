"""The watch delay a measurement stamps its watch-stamped ends with: measured on the cluster at hand, never assumed."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from typing import Any

from chaoskit.measurements.watch import WatchDelay, WatchDelaySampler
from chaoskit.model.timeline import CLOCK_RESOLUTION, MeasurementResult
from chaoskit.seams.kube import FakeKube, KubeError, Obj


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
    delay = WatchDelaySampler(kube, every=60).start(writes=3).finish()
    # the sampler dates a change within its write's round trip (sent..answered): a sample may read under the true lag
    # by what the fake's apply took past its fastest, microseconds here, never more than the clock's resolution
    assert len(delay.samples) == 3 and all(0.05 - CLOCK_RESOLUTION <= s < 0.5 for s in delay.samples), delay
    assert delay.max > CLOCK_RESOLUTION, "the precision of a watch stamp is measured, not the clock's resolution"
    assert not [p for p in kube.objects if "chaoskit-watch-probe" in p], "the probe ConfigMap is deleted"
    assert delay.to_dict()["writes"] == 3 and delay.to_dict()["clock_resolution_s"] == CLOCK_RESOLUTION


def test_a_busy_moment_after_the_start_shows_in_the_delay_of_the_whole_run() -> None:
    kube = SlowWatchKube(lag=0.02)
    sampler = WatchDelaySampler(kube, every=0.05).start(writes=2)
    kube.lag = 0.3  # the host gets busy while the measurement runs
    time.sleep(0.8)
    result = MeasurementResult("m", "t", 0.0)
    delay = sampler.finish(result)
    assert len(delay.samples) > 2 and delay.max >= 0.3, delay
    assert result.extra["watch_delay"]["max_s"] == round(delay.max, 4) and "over the run" in result.notes[-1]
    writes = len(delay.samples)
    time.sleep(0.2)
    assert len(sampler.samples) == writes, "no write is timed after finish()"


def test_writes_a_watch_never_delivers_count_at_the_bound_and_say_so() -> None:
    result = MeasurementResult("m", "t", 0.0)
    delay = WatchDelaySampler(SlowWatchKube(lag=None), every=60, wait=0.3).start(writes=2).finish(result)
    assert delay.samples == (0.3, 0.3) and delay.missed == 2 and delay.max == 0.3  # never tighter than the run
    assert "2 of them never seen on the watch within 0.3 s, counted at that bound" in result.notes[-1]


def test_nothing_written_measures_nothing_and_says_so() -> None:
    assert "could not be measured" in WatchDelay(()).note() and WatchDelay(()).max == CLOCK_RESOLUTION


class RefusingKube(SlowWatchKube):
    def apply(self, obj: Obj) -> Any:
        raise KubeError("admission webhook denied the request", 500)


def test_writes_the_api_server_refuses_are_no_samples_and_stop_nothing() -> None:
    delay = WatchDelaySampler(RefusingKube(lag=0.01), every=0.05).start(writes=2)
    time.sleep(0.2)
    assert delay.finish().samples == ()


class SlowWriteKube(SlowWatchKube):
    """The API server takes `write_s` to make a write (admission, etcd) before it changes the object."""

    write_s = 0.0

    def apply(self, obj: Obj) -> Any:
        time.sleep(self.write_s)
        return super().apply(obj)


def test_a_write_the_api_server_was_slow_to_make_counts_for_what_came_after_it_only() -> None:
    kube = SlowWriteKube(lag=0.02)
    sampler = WatchDelaySampler(kube, every=60).start(writes=1)  # a quick write: the last leg of any write is shorter
    kube.write_s = 0.4
    sampler._time_one()
    delay = sampler.finish()
    assert len(delay.samples) == 2 and all(0.02 <= s < 0.2 for s in delay.samples), delay
