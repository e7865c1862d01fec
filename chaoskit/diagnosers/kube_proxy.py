"""kube-proxy diagnosis, per node: does it run and sync, and do the node's dataplane rules match the Services'
endpoints.

The document's kube-proxy fault is rule-update lag during fast HPA scaling: new pods get no traffic, old ones keep
getting it. Its evidence is kube-proxy's own metrics (a change queued long after the last sync means it is hung or
throttled) and the rules themselves compared with the EndpointSlices: a Service port with ready endpoints
but no rule, an endpoint the rules do not reach, a rule that still reaches an endpoint that is gone.
"""

# Over 300 lines: one component's evidence and every judgement of it, read in one place (next: evidence apart).

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from pydantic import Field

from chaoskit.components import kube_proxy as kp
from chaoskit.components.kube_proxy import Target
from chaoskit.components.service_rules import RuleDiff, at, expected
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Finding, register
from chaoskit.diagnosers.kit.common import (
    HttpAnswer,
    api_unavailable,
    http_command,
    items,
    metrics_of,
    rounded,
    uncollected,
    unread,
)
from chaoskit.diagnosers.kit.sources import Fetched, Sources
from chaoskit.diagnosers.kit.staticpod import ProcessState, assess_process, process_commands
from chaoskit.model.params import FaultParams
from chaoskit.seams.scrape import Metrics, scrape_command

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


@register
class KubeProxyDiagnoser(Diagnoser[KubeProxyEvidence, KubeProxyParams]):
    """kube-proxy on each node: running, healthy, syncing without lag, rules matching the Services' endpoints."""

    component = "kube-proxy"
    per_node = True
    Params = KubeProxyParams

    def collect(self, src: Sources, node: str) -> KubeProxyEvidence:
        ev = self._read(src, node, fresh=False)
        diff = compare(ev)
        # maybe a change in flight between the two reads: look again, unless kube-proxy had synced before rules it
        # writes atomically were all gone (a firewall flushing them, at whose next pass a second read may miss it)
        if diff is not None and not diff.in_step and not wiped_after_a_sync(ev, diff):
            time.sleep(RECHECK_AFTER)
            ev = self._read(src, node, fresh=True)
        return ev

    def _read(self, src: Sources, node: str, *, fresh: bool) -> KubeProxyEvidence:
        services = src.api.fetch(SERVICES, fresh=fresh)  # before the rules: these may only be newer
        slices = src.api.fetch(SLICES, fresh=fresh)
        s = src.sections(
            node,
            {
                "mode": f"curl -sS --max-time 3 {kp.PROXY_MODE_URL}",
                "healthz": http_command(kp.HEALTHZ, max_time=3),
                "metrics": scrape_command(kp.METRICS_URL, METRICS, max_time=5),
                "now": "date +%s.%N",
                "configz": f"curl -sS --max-time 3 {kp.CONFIGZ_URL}",
                "nft": kp.NFT_TABLE,
                "iptables": kp.IPTABLES_NAT,
                **process_commands(kp.PROCESS, static_pod=False),
            },
        )
        mode = s["mode"].text if s["mode"].ok else ""
        now = s["now"].text
        return KubeProxyEvidence(
            node=node,
            node_time=float(now) if re.fullmatch(r"\d+(\.\d+)?", now) else None,
            mode=mode,
            healthz=HttpAnswer.of(s["healthz"]),
            metrics=metrics_of(s["metrics"]),
            min_sync_period=kp.min_sync_period(s["configz"].output),
            rules=s["nft"].output if mode == "nftables" else s["iptables"].output,
            rules_unread=unread(s["nft"] if mode == "nftables" else s["iptables"]),
            process=ProcessState.of(kp.PROCESS, s),
            services=services,
            slices=slices,
        )

    def assess(self, ev: KubeProxyEvidence) -> list[Assessed]:
        return [
            assess_process(
                "kube-proxy",
                ev.node,
                ev.process,
                frozen_effect=f"Service rules on {ev.node} stop following endpoint changes",
                down_effect=f"Service rules on {ev.node} stop following endpoint changes",
            ),
            self._health(ev),
            self._sync(ev),
            self._rules(ev),
        ]

    def _health(self, ev: KubeProxyEvidence) -> Assessed:
        h = ev.healthz
        e = Evidence(
            "healthz",
            f"curl {kp.HEALTHZ} and {kp.PROXY_MODE_URL} on {ev.node}",
            {
                "answer": h.describe(),
                "body": h.body[:300] or None,
                "mode": ev.mode or None,
                "min_sync_period_s": ev.min_sync_period,
            },
        )
        if h.unread:
            return Assessed(e, (uncollected("kube-proxy", ev.node, "/healthz", h.unread, e),))
        if not h.answered or h.code != 200:
            return Assessed(
                e,
                (
                    Finding(
                        "critical",
                        "kube-proxy",
                        f"kube-proxy on {ev.node} is unhealthy: /healthz {h.describe()}",
                        "kube-proxy is down or frozen, or has not synced its rules within its deadline: Service "
                        "traffic from "
                        "this node follows stale rules",
                        (e,),
                        (
                            f"crictl logs of kube-proxy on {ev.node}",
                            "kubectl -n kube-system delete pod -l k8s-app=kube-proxy "
                            f"--field-selector spec.nodeName={ev.node}",
                        ),
                    ),
                ),
            )
        if ev.min_sync_period is not None and ev.min_sync_period > self.p.min_sync_warning:
            return Assessed(
                e,
                (
                    Finding(
                        "warning",
                        "kube-proxy",
                        f"kube-proxy on {ev.node} syncs at most every {ev.min_sync_period:g}s (minSyncPeriod)",
                        "endpoint changes (an HPA scale-up's new pods) reach this node's rules up to minSyncPeriod "
                        "late",
                        (e,),
                        (
                            "lower minSyncPeriod in the kube-system/kube-proxy ConfigMap (1s is kube-proxy's default) "
                            "and restart the kube-proxy pods",
                        ),
                    ),
                ),
            )
        return Assessed(e)

    def _sync(self, ev: KubeProxyEvidence) -> Assessed:
        m = ev.metrics
        source = f"kubeproxy_sync_proxy_rules_* from {kp.METRICS_URL} on {ev.node}"
        if not m or ev.node_time is None:
            return Assessed(Evidence("rule-sync", source, {"error": m.error or "no clock"}, available=False))
        queued = _newest(m, kp.LAST_QUEUED)
        synced = _newest(m, kp.LAST_SYNC)
        waiting = _change_waiting(ev) or 0.0
        programming = m.histogram(kp.NETWORK_PROGRAMMING)
        e = Evidence(
            "rule-sync",
            source,
            {
                "last_queued_s_ago": None if queued is None else round(ev.node_time - queued, 1),
                "last_synced_s_ago": None if synced is None else round(ev.node_time - synced, 1),
                "change_waiting_s": round(waiting, 1),
            },
            metrics=rounded(
                [
                    ("endpoint_changes_pending", m.total(kp.ENDPOINT_CHANGES_PENDING)),
                    ("service_changes_pending", m.total(kp.SERVICE_CHANGES_PENDING)),
                    ("network_programming_p99_s_since_start", programming.quantile(0.99) if programming else None),
                ]
            ),
        )
        if waiting <= self.p.lag_warning:
            return Assessed(e)
        return Assessed(
            e,
            (
                Finding(
                    "critical" if waiting > self.p.lag_critical else "warning",
                    "kube-proxy",
                    f"kube-proxy on {ev.node} has not synced a change queued {waiting:.0f}s ago",
                    "kube-proxy's rule sync is hung or throttled (last_queued ≫ last_synced): new endpoints get no "
                    "traffic "
                    "from this node and removed ones keep getting it",
                    (e,),
                    (
                        f"crictl logs of kube-proxy on {ev.node}: look for sync errors",
                        "check minSyncPeriod and the sync duration (kubeproxy_sync_proxy_rules_duration_seconds)",
                    ),
                ),
            ),
        )

    def _in_flight(self, ev: KubeProxyEvidence) -> float:
        """How long a queued change may wait for this kube-proxy's next sync before the rules count as late."""
        period = ev.min_sync_period if ev.min_sync_period is not None else DEFAULT_MIN_SYNC
        return min(self.p.lag_warning, period + SYNC_GRACE)

    def _rules(self, ev: KubeProxyEvidence) -> Assessed:
        source = (
            f"{kp.NFT_TABLE if ev.mode == 'nftables' else 'iptables-save -t nat'} on "
            f"{ev.node}; GET {SERVICES}, {SLICES}"
        )
        if ev.mode in RULE_MODES and ev.rules_unread:
            e = Evidence("rules", source, {"mode": ev.mode, "error": ev.rules_unread}, available=False)
            return Assessed(e, (uncollected("kube-proxy", ev.node, "the Service rules", ev.rules_unread, e),))
        for fetched in (ev.services, ev.slices):
            if not fetched.ok:
                if no_service_rule_after_a_sync(ev):
                    return self._wiped_without_the_api(ev, source, fetched.error)
                return api_unavailable("kube-proxy", "rules", source, fetched.error)
        if ev.mode not in RULE_MODES:
            return Assessed(
                Evidence(
                    "rules",
                    source,
                    {"mode": ev.mode or "unknown", "note": "rules are compared in iptables and nftables modes"},
                )
            )
        diff = compare(ev)
        assert diff is not None  # the mode is one compare() knows
        want_services, missing_services = diff.want_services, diff.missing_services
        missing_endpoints, stale = diff.missing_endpoints, diff.stale
        e = Evidence(
            "rules",
            source,
            {
                "mode": ev.mode,
                "service_ports_expected": len(want_services),
                "service_ports_programmed": len(diff.have_services & want_services.keys()),
                "endpoints_expected": len(diff.want_endpoints),
                "endpoints_programmed": len(diff.have_endpoints & diff.want_endpoints),
                "stale_endpoints": len(stale),
            },
            conditions=tuple(
                [f"no rule for {want_services[t]} ({t[0]}:{t[2]}/{t[1]})" for t in missing_services[:8]]
                + [f"endpoint {at(t)} not reachable through the rules" for t in missing_endpoints[:8]]
                + [f"rules still send traffic to {at(t)}, no longer an endpoint" for t in stale[:8]]
            ),
        )
        return Assessed(e, self._rule_findings(ev, diff, e))

    def _rule_findings(self, ev: KubeProxyEvidence, diff: RuleDiff, e: Evidence) -> tuple[Finding, ...]:
        """Service rules missing, then endpoints missing or stale: in flight while a queued change waits, else late."""
        want_services, missing_services = diff.want_services, diff.missing_services
        missing_endpoints, stale = diff.missing_endpoints, diff.stale
        findings = []
        fix = (
            f"kube-proxy rewrites its rules at its next sync: check its health and logs on {ev.node}",
            f"restart kube-proxy on {ev.node} (delete its pod) to force a full resync",
        )
        if missing_services:
            wiped = diff.wiped
            findings.append(
                Finding(
                    "critical" if wiped else "warning",
                    "kube-proxy",
                    f"{'No' if wiped else len(missing_services)} Service rule(s) on {ev.node}"
                    + (" at all" if wiped else f" missing ({want_services[missing_services[0]]})"),
                    "the node's Service rules were flushed or never written: ClusterIPs do not answer from this node "
                    "(kube-proxy only rewrites them at its next change-driven or periodic sync)",
                    (e,),
                    fix,
                )
            )
        waiting = _change_waiting(ev)
        if (missing_endpoints or stale) and waiting and waiting <= self._in_flight(ev):
            # the rules were read between kube-proxy queuing the change and its next sync: in flight, not late
            findings.append(
                Finding(
                    "info",
                    "kube-proxy",
                    f"rules on {ev.node} catch up with the EndpointSlices: {len(missing_endpoints)} endpoint(s) "
                    "missing, "
                    f"{len(stale)} stale, in a change kube-proxy queued {waiting:.1f}s ago",
                    "the rules were read while kube-proxy's next sync was due: a queued change may wait "
                    f"{self._in_flight(ev):.0f}s (its minSyncPeriod and one sync) before it is late",
                    (e,),
                    (),
                )
            )
        elif missing_endpoints or stale:
            findings.append(
                Finding(
                    "warning",
                    "kube-proxy",
                    f"rules on {ev.node} lag the EndpointSlices: {len(missing_endpoints)} endpoint(s) missing, "
                    f"{len(stale)} stale",
                    "kube-proxy has not applied the latest endpoint changes: new pods get no traffic from this node, "
                    "removed ones still do",
                    (e,),
                    fix,
                )
            )
        return tuple(findings)

    def _wiped_without_the_api(self, ev: KubeProxyEvidence, source: str, api_error: str) -> Assessed:
        """No Service rule at all needs no API to judge: every cluster has default/kubernetes (the API server's own
        ClusterIP), so its rule alone should be there; a slow API server must not hide a flushed table."""
        why = "not even default/kubernetes has a rule, and kube-proxy synced before this read"
        e = Evidence(
            "rules", source, {"mode": ev.mode, "service_ports_programmed": 0, "api": api_error}, conditions=(why,)
        )
        return Assessed(
            e,
            (
                Finding(
                    "critical",
                    "kube-proxy",
                    f"No Service rule(s) on {ev.node} at all",
                    "the node's Service rules were flushed after kube-proxy's last sync: ClusterIPs do not answer from "
                    "this "
                    "node (kube-proxy only rewrites them at its next change-driven or periodic sync)",
                    (e,),
                    (
                        f"restart kube-proxy on {ev.node} (delete its pod) to force a full resync",
                        "find what flushes the node's nat table or nftables (a firewall, a script)",
                    ),
                ),
            ),
        )


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


def _change_waiting(ev: KubeProxyEvidence) -> float | None:
    """How long the change kube-proxy queued last has waited for a sync (0 when none waits; None unread)."""
    m = ev.metrics
    if not m or ev.node_time is None:
        return None
    queued, synced = _newest(m, kp.LAST_QUEUED), _newest(m, kp.LAST_SYNC)
    return ev.node_time - queued if queued is not None and (synced is None or queued > synced) else 0.0


def _newest(m: Metrics, name: str) -> float | None:
    values = [s.value for s in m.select(name) if s.labels.get("ip_family", "IPv4") == "IPv4"]
    return max(values) if values else None
