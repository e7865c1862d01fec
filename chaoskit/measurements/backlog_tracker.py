"""How a backlog of pods drained: pure logic over when each pod was created and when it was bound to a node.

The figures a user asks of a scheduler that comes back to a backlog: how many pods waited at once, how fast it bound
them once it was back (pods a second, from its first bind after the longest pause to the last bind), and how long the
last pod waited.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

BURST_GAP = 2.0  # seconds without a bind that end one burst of binds: the scheduler binds hundreds a second


@dataclass
class BacklogTracker:
    created: dict[str, float]
    bound: dict[str, float]

    def __init__(self) -> None:
        self.created, self.bound = {}, {}

    def pod(self, obj: Mapping[str, Any], at: float) -> None:
        """A watch event of one pod, received at `at` (our clock): its first sight, and its first with a node."""
        name = obj["metadata"]["name"]
        self.created.setdefault(name, at)
        if obj.get("spec", {}).get("nodeName"):
            self.bound.setdefault(name, at)

    def waits(self) -> dict[str, tuple[float, float]]:
        """Per bound pod: (created, bound)."""
        return {n: (self.created[n], b) for n, b in self.bound.items() if n in self.created}

    def drain(self) -> dict[str, Any]:
        """The backlog's figures; None where there is nothing to tell (no pod bound)."""
        waits = self.waits()
        binds = sorted(b for _, b in waits.values())
        peak = _most_waiting(self.created, self.bound)
        if not binds:
            return {"pods": len(self.created), "bound": 0, "peak_waiting": peak, "rate": None, "last_wait": None}
        # the drain is the burst after the longest pause between binds: the scheduler's return
        starts = [0] + [i for i in range(1, len(binds)) if binds[i] - binds[i - 1] > BURST_GAP]
        first = max(starts, key=lambda i: binds[i] - (binds[i - 1] if i else binds[i]))
        burst = binds[first:]
        span = burst[-1] - burst[0]
        last = max(waits.values(), key=lambda cb: cb[1])
        return {
            "pods": len(self.created),
            "bound": len(binds),
            "peak_waiting": peak,
            "drained": len(burst),
            "drain_s": span,
            "rate": (len(burst) - 1) / span if span > 0 else None,
            "last_wait": last[1] - last[0],
            "longest_wait": max(b - c for c, b in waits.values()),
            "unbound": len(self.created) - len(binds),
        }


def _most_waiting(created: Mapping[str, float], bound: Mapping[str, float]) -> int:
    """The most pods created and not yet bound at any one moment."""
    events = sorted([(t, 1) for t in created.values()] + [(t, -1) for n, t in bound.items() if n in created])
    waiting = peak = 0
    for _, step in events:
        waiting += step
        peak = max(peak, waiting)
    return peak
