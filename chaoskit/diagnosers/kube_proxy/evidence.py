"""What the kube-proxy diagnosis reads and its thresholds, and what a read of the rules says about kube-proxy's last
sync (read on the node's own clock)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from chaoskit.components import kube_proxy as kp
from chaoskit.components.kube_proxy import Target
from chaoskit.components.service_rules import RuleDiff, expected
from chaoskit.diagnosers.kit.common import (
    HttpAnswer,
    items,
)
from chaoskit.diagnosers.kit.refused import Grants
from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.diagnosers.kit.staticpod import ProcessState
from chaoskit.model.params import FaultParams
from chaoskit.seams.scrape import Metrics

SERVICES = "/api/v1/services"
SLICES = "/apis/discovery.k8s.io/v1/endpointslices"
METRICS = (
    kp.LAST_QUEUED,
    kp.LAST_SYNC,
    kp.SYNC_DURATION,
    kp.NETWORK_PROGRAMMING,
    kp.ENDPOINT_CHANGES_PENDING,
    kp.SERVICE_CHANGES_PENDING,
)
SYNC_MARGIN = 1.0  # seconds: the metrics scrape and the rules read run side by side, not at one instant
RULE_MODES = ("nftables", "iptables")  # the modes whose rules chaoskit reads (not ipvs)
RECHECK_AFTER = 2.0  # seconds: kube-proxy's minSyncPeriod is 1 s, so an in-flight change is programmed by then
# A queued change is in flight (the rules read before kube-proxy's next sync) for its minSyncPeriod and one sync more;
# a kube-proxy 9 s behind on every change at a 1 s period is late, however far that is from lag_warning
SYNC_GRACE = 2.0
DEFAULT_MIN_SYNC = 1.0  # kind's minSyncPeriod, when /configz did not answer


class KubeProxyParams(FaultParams):
    lag_warning: float = Field(default=10.0, description="Seconds a queued change may wait for a sync: warning.")
    lag_critical: float = Field(default=60.0, description="Seconds a queued change may wait for a sync: critical.")
    min_sync_warning: float = Field(default=5.0, description="minSyncPeriod above this (seconds): warning.")


@dataclass(frozen=True)
class KubeProxyEvidence:
    node: str
    node_time: float | None  # the node's clock when the metrics were read (kube-proxy's timestamps are on it)
    mode: str  # /proxyMode: iptables, ipvs, nftables ("" if it did not answer)
    healthz: HttpAnswer
    metrics: Metrics
    min_sync_period: float | None  # from /configz
    rules: str  # `nft list table ip kube-proxy` or the KUBE-* lines of `iptables-save -t nat`
    rules_unread: str  # why that read never finished (cut off by a loaded node, not run); "" when it did
    process: ProcessState
    services: Fetched
    slices: Fetched
    grants: Grants | None = None  # the cluster's RBAC, read only when its log shows a refusal (403)


def wiped_after_a_sync(ev: KubeProxyEvidence, diff: RuleDiff) -> bool:
    """Every Service rule gone although kube-proxy's last sync ended before this read (by its metrics, on the node's
    clock): kube-proxy writes its tables in one transaction, so something else emptied them."""
    return diff.wiped and synced_before_the_read(ev)


def no_service_rule_after_a_sync(ev: KubeProxyEvidence) -> bool:
    """The rules, read in full, hold no Service at all (not even default/kubernetes) after kube-proxy's last sync."""
    if ev.mode not in RULE_MODES or ev.rules_unread:
        return False
    have_services, _ = programmed(ev)
    return not have_services and synced_before_the_read(ev)


def synced_before_the_read(ev: KubeProxyEvidence) -> bool:
    synced = _newest(ev.metrics, kp.LAST_SYNC) if ev.metrics else None
    if not synced or ev.node_time is None:  # no sync yet: maybe nothing was written so far
        return False
    return synced < ev.node_time - SYNC_MARGIN


def compare(ev: KubeProxyEvidence) -> RuleDiff | None:
    """None when the API objects are missing or the mode has no rules we read (ipvs)."""
    if not (ev.services.ok and ev.slices.ok) or ev.mode not in RULE_MODES:
        return None
    want_services, want_endpoints, allowed = expected(items(ev.services), items(ev.slices), ev.node)
    have_services, have_endpoints = programmed(ev)
    return RuleDiff(want_services, have_services, want_endpoints, allowed, have_endpoints)


def programmed(ev: KubeProxyEvidence) -> tuple[set[Target], set[Target]]:
    """The ClusterIP entries and endpoints the node's rules hold, in its mode's syntax."""
    return (kp.nft_rules if ev.mode == "nftables" else kp.iptables_rules)(ev.rules)


def change_waiting(ev: KubeProxyEvidence) -> float | None:
    """How long the change kube-proxy queued last has waited for a sync (0 when none waits; None unread)."""
    m = ev.metrics
    if not m or ev.node_time is None:
        return None
    queued, synced = _newest(m, kp.LAST_QUEUED), _newest(m, kp.LAST_SYNC)
    return ev.node_time - queued if queued is not None and (synced is None or queued > synced) else 0.0


def _newest(m: Metrics, name: str) -> float | None:
    values = [s.value for s in m.select(name) if s.labels.get("ip_family", "IPv4") == "IPv4"]
    return max(values) if values else None
