"""The API server's way back after an outage, from the looks a poller takes every few seconds (pure: no I/O).

Each look holds what the API answered then: /readyz, the open watches, the LIST counter and the SLI histogram of
single-object calls (its own /metrics), every node's Lease renewTime and how many nodes are Ready. From them:

- back: the first ready look after a failed one (precise to the poll interval, measured between the two looks);
- watches back: the first look whose open watches reach `fraction` of the count before the outage: every client
  (kubelets, kube-proxy, controllers, kwok) re-listed and watches again;
- leases renewed: every node's first renewTime since the last failed look, stamped by its renewer (kubelet or kwok)
  in microseconds; the last of them is when the cluster's heartbeats are whole again;
- nodes ready: the first look with every node Ready;
- per window between two looks: LIST calls a second and the p99 of single-object calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaoskit.seams.scrape import Histogram, counter_delta

TYPE = "apiserver_recovery"
STAGES = ("api_back", "watches_back", "leases_renewed", "nodes_ready")


@dataclass(frozen=True)
class Look:
    at: float
    ready: bool
    watches: float | None = None  # open WATCH requests (apiserver_longrunning_requests)
    lists: float | None = None  # LIST calls served since the process started (a counter)
    single: Histogram | None = None  # single-object calls' SLI latency, since the process started
    renewed: dict[str, float] = field(default_factory=dict)  # node -> its Lease's renewTime
    nodes: int = 0
    ready_nodes: int = 0
    error: str = ""  # why the API did not answer


@dataclass(frozen=True)
class Reached:
    """When a stage was first seen done, and how precisely (the poll's bracket, or the renewer's own stamp)."""

    at: float
    precision: float


@dataclass
class RecoveryTracker:
    fraction: float = 0.95  # of the watches open before the outage that must be open again
    baseline: Look | None = None
    looks: list[Look] = field(default_factory=list)

    def look(self, look: Look) -> None:
        if self.baseline is None and look.ready and look.watches is not None:
            self.baseline = look
        self.looks.append(look)

    @property
    def down(self) -> Look | None:
        """The first look that found the API server not ready."""
        return next((x for x in self.looks if not x.ready), None)

    def _after_down(self) -> list[Look]:
        first = self.down
        return [] if first is None else [x for x in self.looks if x.at > first.at]

    def back(self) -> Reached | None:
        previous = self.down
        for x in self._after_down():
            if x.ready:
                assert previous is not None
                return Reached(x.at, x.at - previous.at)
            previous = x
        return None

    def _first(self, ok: Any) -> Reached | None:
        """The first look after back for which `ok(look)` holds, bracketed by the look before it."""
        back = self.back()
        if back is None:
            return None
        previous_at = back.at - back.precision
        for x in self._after_down():
            if x.at >= back.at and x.ready and ok(x):
                return Reached(x.at, x.at - previous_at)
            previous_at = x.at
        return None

    def watches_back(self) -> Reached | None:
        if self.baseline is None or self.baseline.watches is None:
            return None
        wanted = self.fraction * self.baseline.watches
        return self._first(lambda x: x.watches is not None and x.watches >= wanted)

    def nodes_ready(self) -> Reached | None:
        return self._first(lambda x: x.nodes > 0 and x.ready_nodes == x.nodes)

    def leases_renewed(self) -> Reached | None:
        """The last node's first renewal since the API server could answer again (after the last failed look), by
        its renewer's own stamp; None until every node renewed."""
        back = self.back()
        if back is None or self.baseline is None:
            return None
        since = back.at - back.precision
        first: dict[str, float] = {}
        for x in self._after_down():
            for node, renewed in x.renewed.items():
                if renewed > since and node not in first:
                    first[node] = renewed
        if not first or set(first) < set(self.baseline.renewed):
            return None
        return Reached(max(first.values()), 1e-6)

    def reached(self) -> dict[str, Reached | None]:
        return {
            "api_back": self.back(),
            "watches_back": self.watches_back(),
            "leases_renewed": self.leases_renewed(),
            "nodes_ready": self.nodes_ready(),
        }

    def steady(self) -> bool:
        return all(r is not None for r in self.reached().values())

    def windows(self) -> list[dict[str, Any]]:
        """Between two consecutive looks that both answered (before the outage too, as the baseline): LIST calls a
        second, the single-object calls' p99, the open watches."""
        out = []
        for before, after in zip(self.looks, self.looks[1:], strict=False):
            if not (before.ready and after.ready) or after.lists is None:
                continue
            lists = counter_delta(after.lists, before.lists)
            single = after.single
            if single is not None and before.single is not None:
                single = single.minus(before.single)
            out.append(
                {
                    "from": before.at,
                    "to": after.at,
                    "lists_per_s": None if lists is None else lists / (after.at - before.at),
                    "single_p99": None if single is None else single.quantile(0.99),
                    "single_calls": None if single is None else single.count,
                    "watches": after.watches,
                }
            )
        return out
