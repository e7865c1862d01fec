"""The node's Service rules against the EndpointSlices: missing Services, missing or stale endpoints, a flushed table;
in flight while a queued change waits for kube-proxy's next sync, late after it."""

from __future__ import annotations

from chaoskit.components import kube_proxy as kp
from chaoskit.components.service_rules import RuleDiff, at
from chaoskit.diagnosers.kit.base import Assessed, Evidence, Finding
from chaoskit.diagnosers.kit.common import (
    api_unavailable,
    uncollected,
)
from chaoskit.diagnosers.kube_proxy.evidence import (
    DEFAULT_MIN_SYNC,
    RULE_MODES,
    SERVICES,
    SLICES,
    SYNC_GRACE,
    KubeProxyEvidence,
    KubeProxyParams,
    change_waiting,
    compare,
    no_service_rule_after_a_sync,
)
from chaoskit.figures import seconds


def in_flight(p: KubeProxyParams, ev: KubeProxyEvidence) -> float:
    """How long a queued change may wait for this kube-proxy's next sync before the rules count as late."""
    period = ev.min_sync_period if ev.min_sync_period is not None else DEFAULT_MIN_SYNC
    return min(p.lag_warning, period + SYNC_GRACE)


def rules(p: KubeProxyParams, ev: KubeProxyEvidence) -> Assessed:
    source = (
        f"{kp.NFT_TABLE if ev.mode == 'nftables' else 'iptables-save -t nat'} on {ev.node}; GET {SERVICES}, {SLICES}"
    )
    if ev.mode in RULE_MODES and ev.rules_unread:
        e = Evidence("rules", source, {"mode": ev.mode, "error": ev.rules_unread}, available=False)
        return Assessed(e, (uncollected("kube-proxy", ev.node, "the Service rules", ev.rules_unread, e),))
    for fetched in (ev.services, ev.slices):
        if not fetched.ok:
            if no_service_rule_after_a_sync(ev):
                return _wiped_without_the_api(ev, source, fetched.error)
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
    return Assessed(e, _rule_findings(p, ev, diff, e))


def _rule_findings(p: KubeProxyParams, ev: KubeProxyEvidence, diff: RuleDiff, e: Evidence) -> tuple[Finding, ...]:
    """Service rules missing, then endpoints missing or stale: in flight while a queued change waits, else late."""
    want_services, missing_services = diff.want_services, diff.missing_services
    missing_endpoints, stale = diff.missing_endpoints, diff.stale
    findings = []
    fix = (
        f"kube-proxy rewrites its rules at its next sync: check its health and logs on {ev.node}",
        f"restart kube-proxy on {ev.node} (delete its pod) to force a full resync",
    )
    waiting = change_waiting(ev)
    in_step = waiting is not None and 0 < waiting <= in_flight(p, ev)
    if missing_services and not diff.wiped and in_step:
        # a Service whose endpoints just changed (its last one not Ready for a moment) is between two syncs
        findings.append(
            Finding(
                "info",
                "kube-proxy",
                f"rules on {ev.node} catch up with the Services: {len(missing_services)} missing "
                f"({want_services[missing_services[0]]}), in a change kube-proxy queued {seconds(waiting)} ago",
                "the rules were read while kube-proxy's next sync was due: a queued change may wait "
                f"{seconds(in_flight(p, ev))} (its minSyncPeriod and one sync) before it is late",
                (e,),
                (),
            )
        )
    elif missing_services:
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
    if (missing_endpoints or stale) and in_step:
        # the rules were read between kube-proxy queuing the change and its next sync: in flight, not late
        findings.append(
            Finding(
                "info",
                "kube-proxy",
                f"rules on {ev.node} catch up with the EndpointSlices: {len(missing_endpoints)} endpoint(s) "
                "missing, "
                f"{len(stale)} stale, in a change kube-proxy queued {seconds(waiting)} ago",
                "the rules were read while kube-proxy's next sync was due: a queued change may wait "
                f"{seconds(in_flight(p, ev))} (its minSyncPeriod and one sync) before it is late",
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


def _wiped_without_the_api(ev: KubeProxyEvidence, source: str, api_error: str) -> Assessed:
    """No Service rule at all needs no API to judge: every cluster has default/kubernetes (the API server's own
    ClusterIP), so its rule alone should be there; a slow API server must not hide a flushed table."""
    why = "not even default/kubernetes has a rule, and kube-proxy synced before this read"
    e = Evidence("rules", source, {"mode": ev.mode, "service_ports_programmed": 0, "api": api_error}, conditions=(why,))
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
