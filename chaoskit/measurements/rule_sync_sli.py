"""kube-proxy's own rule-sync SLI, read in each node and set next to ours (rule_sync.py).

`kubeproxy_network_programming_duration_seconds` is observed once per EndpointSlice update carrying a
last-change-trigger-time annotation, when the sync that programmed it finished: "now − trigger time". Its start has
1 s resolution (the pod's Ready transition), its end ms. It has no Service label, so only deltas between two scrapes
mean anything, and other Services' updates meanwhile are in them. The sync timestamps are the node's clock, which is
the host's on kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from chaoskit.components.kube_proxy import (
    FULL_SYNC_DURATION,
    IPTABLES_RULES,
    LAST_QUEUED,
    LAST_SYNC,
    METRICS_URL,
    PARTIAL_SYNC_DURATION,
)
from chaoskit.components.kube_proxy import NETWORK_PROGRAMMING as PROGRAMMING
from chaoskit.measurements.rule_sync_tracker import RuleSyncTracker
from chaoskit.seams.nodeexec import Node, NodeExec
from chaoskit.seams.scrape import Histogram, Metric, Metrics, NodeScraper, ScrapeError

SCRAPE_TIMEOUT = 3.0  # a frozen kube-proxy does not answer: do not hold the measurement up for it


@dataclass(frozen=True)
class SliSnapshot:
    """kube-proxy's own figures on one node at one moment."""

    node: str
    at: float  # our clock when scraped
    count: float | None = None  # network-programming observations since kube-proxy started
    sum: float | None = None
    last_queued: float | None = None  # node clock: a change was queued for a sync
    last_sync: float | None = None  # node clock: the last sync finished
    full: Histogram | None = None  # its syncs that rewrote every rule, and how long each took
    partial: Histogram | None = None  # its syncs that rewrote only what changed
    rules: float | None = None  # iptables rules it owns, all tables (nftables mode exports no count)
    cpu: float | None = None  # its process's CPU seconds since it started
    rss: float | None = None  # its resident memory, bytes
    error: str = ""

    @property
    def waiting(self) -> float | None:
        """How long the last queued change had waited for a sync when scraped (0 when none was waiting)."""
        if self.last_queued is None or self.last_sync is None:
            return None
        return max(0.0, self.at - self.last_queued) if self.last_queued > self.last_sync else 0.0


def sli_snapshot(node: str, at: float, families: Sequence[Metric]) -> SliSnapshot:
    m = Metrics.of(families)

    def stamp(name: str) -> float | None:  # the IPv4 proxier: the family our rules probe reads
        return m.value(name, ip_family="IPv4")

    return SliSnapshot(
        node,
        at,
        m.total(f"{PROGRAMMING}_count") or 0.0,
        m.total(f"{PROGRAMMING}_sum") or 0.0,
        stamp(LAST_QUEUED),
        stamp(LAST_SYNC),
        m.histogram(FULL_SYNC_DURATION),
        m.histogram(PARTIAL_SYNC_DURATION),
        m.total(IPTABLES_RULES),
        m.value("process_cpu_seconds_total"),
        m.value("process_resident_memory_bytes"),
    )


def _syncs(now: Histogram | None, before: Histogram | None) -> dict[str, Any]:
    """Syncs between two scrapes: how many, and how long they took (mean, p90 within the histogram's buckets)."""
    if now is None:
        return {"count": 0, "mean": None, "p90": None}
    delta = now.minus(before) if before is not None else now
    return {"count": int(delta.count), "mean": delta.mean, "p90": delta.quantile(0.9)}


def kube_proxy_cost(before: SliSnapshot, after: SliSnapshot) -> dict[str, Any]:
    """What kube-proxy itself spent between two snapshots of one node: its full and partial syncs, the rules it
    owns at the end, its CPU seconds and its memory."""
    if before.error or after.error:
        return {"error": before.error or after.error}
    cpu = None if after.cpu is None or before.cpu is None or after.cpu < before.cpu else after.cpu - before.cpu
    return {
        "full_syncs": _syncs(after.full, before.full),
        "partial_syncs": _syncs(after.partial, before.partial),
        "rules": after.rules,
        "cpu_seconds": cpu,
        "rss_bytes": after.rss,
        "seconds": after.at - before.at,
    }


@dataclass(frozen=True)
class SliDelta:
    """kube-proxy's SLI between two snapshots of one node, or why there is none."""

    count: int = 0
    mean: float | None = None
    error: str = ""


def sli_delta(before: SliSnapshot, after: SliSnapshot) -> SliDelta:
    if before.error or after.error:
        return SliDelta(error=before.error or after.error)
    assert before.count is not None and after.count is not None and before.sum is not None and after.sum is not None
    count = after.count - before.count
    if count < 0:
        return SliDelta(error="kube-proxy restarted in between: its histogram started over")
    return SliDelta(int(count), (after.sum - before.sum) / count if count else None)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def compare_sli(
    tracker: RuleSyncTracker, nodes: Sequence[str], snapshots: Sequence[Sequence[SliSnapshot]]
) -> dict[str, Any]:
    """Per node, our rule-sync figures next to kube-proxy's SLI over each stretch between two snapshots and over the
    whole run. `ours_from_trigger` starts where the SLI does (the trigger-time annotation), so the two differ only by
    when the sync is seen (our probe: late by up to each sample's measured precision) and by the observations one
    side has and the other lacks."""
    out: dict[str, Any] = {}
    stretches = list(zip(snapshots, snapshots[1:], strict=False))
    for i, node in enumerate(nodes):
        rows = []
        for before, after in [*((b[i], a[i]) for b, a in stretches), (snapshots[0][i], snapshots[-1][i])]:
            rows.append(_stretch(tracker, node, before, after))
        whole = rows.pop()
        diffs = [r["difference"] for r in rows if r["difference"] is not None]
        out[node] = {
            **whole,
            "start": asdict(snapshots[0][i]),
            "stop": asdict(snapshots[-1][i]),
            "stretches": rows if len(rows) > 1 else [],
            "cost": kube_proxy_cost(snapshots[0][i], snapshots[-1][i]),
            "agreement": {
                "stretches": len(diffs),
                "mean_difference": _mean(diffs),
                "max_abs_difference": max((abs(d) for d in diffs), default=None),
            },
        }
    return out


def _stretch(tracker: RuleSyncTracker, node: str, before: SliSnapshot, after: SliSnapshot) -> dict[str, Any]:
    delta = sli_delta(before, after)
    ours, from_trigger = [], []
    for c in tracker.changes:
        end = None if c.late else tracker.rules_programmed(c, node)
        if end is None or not before.at < end <= after.at:
            continue
        ours.append(end - c.at)
        if c.trigger is not None:
            from_trigger.append(end - c.trigger)
    annotated = sum(1 for at, _ in tracker.annotated if before.at < at <= after.at)
    ours_mean, trigger_mean = _mean(ours), _mean(from_trigger)
    return {
        "from": before.at,
        "to": after.at,
        "sli": asdict(delta),
        "rules_programmed": {"count": len(ours), "mean": ours_mean, "max": max(ours, default=None)},
        "ours_from_trigger": {"count": len(from_trigger), "mean": trigger_mean},
        "difference": None if delta.mean is None or trigger_mean is None else delta.mean - trigger_mean,
        # observations we cannot pair with an update of this Service's slices: mostly other Services' changes
        "unmatched": delta.count - annotated if not delta.error else None,
        "waiting_at_stop": after.waiting,
    }


def scrape_sli(nodes: NodeExec, node: Node, at: float) -> SliSnapshot:
    """kube-proxy's figures on `node`, scraped inside it; a snapshot holding the error when it does not answer."""
    try:
        return sli_snapshot(node.name, at, NodeScraper(nodes, node, timeout=SCRAPE_TIMEOUT).scrape(METRICS_URL))
    except ScrapeError as exc:
        return SliSnapshot(node.name, at, error=str(exc)[:300])
