"""kube-proxy's sync runner simulated for unit tests of the rule-sync measurement and the checks built on it."""

from __future__ import annotations

import threading
import time

from chaoskit.measurements.rule_sync_delay import SLICE_PATH, OnRules, Timing
from chaoskit.seams.kube import FakeKube

FAST = Timing(right_after=0.2, probe_lag=0.02, poll=0.01)  # the real timing, scaled down with the periods below


class SimulatedKubeProxy:
    """kube-proxy v1.34's sync runner on one node, as the probe sees it: a change is synced at once when the node is
    idle, else `period` after the last sync ended; the rules reads report each new set."""

    def __init__(self, kube: FakeKube, node: str, period: float, on_rules: OnRules, synced_at_start: bool) -> None:
        self.kube, self.node, self.period, self.on_rules = kube, node, period, on_rules
        self.last_sync = time.time() if synced_at_start else float("-inf")
        self.programmed = self._wanted()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _wanted(self) -> frozenset[str]:
        return frozenset(ip for ep in self.kube.objects[SLICE_PATH]["endpoints"] for ip in ep["addresses"])

    def _run(self) -> None:
        self.on_rules(self.node, time.time(), self.programmed)  # the probe's first read
        while not self.stopped.wait(0.002):
            now = time.time()
            if self._wanted() != self.programmed and now >= self.last_sync + self.period:
                self.programmed, self.last_sync = self._wanted(), now
                self.on_rules(self.node, now, self.programmed)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()
