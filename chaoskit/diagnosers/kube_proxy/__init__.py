"""kube-proxy diagnosis, per node: does it run and sync, and do the node's dataplane rules match the Services'
endpoints.

The document's kube-proxy fault is rule-update lag during fast HPA scaling: new pods get no traffic, old ones keep
getting it. Its evidence is kube-proxy's own metrics (a change queued long after the last sync means it is hung or
throttled) and the rules themselves compared with the EndpointSlices: a Service port with ready endpoints
but no rule, an endpoint the rules do not reach, a rule that still reaches an endpoint that is gone.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable

from chaoskit.components import kube_proxy as kp
from chaoskit.components.rbac import refusals
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Finding, register
from chaoskit.diagnosers.kit.common import (
    HttpAnswer,
    http_command,
    metrics_of,
    rounded,
    uncollected,
    unread,
)
from chaoskit.diagnosers.kit.refused import fresh, read_grants, refused
from chaoskit.diagnosers.kit.sources import Fetched, Sources
from chaoskit.diagnosers.kit.staticpod import ProcessState, assess_process, process_commands
from chaoskit.diagnosers.kube_proxy.evidence import (
    METRICS,
    RECHECK_AFTER,
    SERVICES,
    SLICES,
    KubeProxyEvidence,
    KubeProxyParams,
    _newest,
    change_waiting,
    compare,
    wiped_after_a_sync,
)
from chaoskit.diagnosers.kube_proxy.rules import rules
from chaoskit.figures import seconds
from chaoskit.seams.scrape import scrape_command


@register
class KubeProxyDiagnoser(Diagnoser[KubeProxyEvidence, KubeProxyParams]):
    """kube-proxy on each node: running, healthy, syncing without lag, rules matching the Services' endpoints."""

    component = "kube-proxy"
    per_node = True
    Params = KubeProxyParams

    def collect(self, src: Sources, node: str) -> KubeProxyEvidence:
        ev = self._read(src, node, fresh=False)
        if refusals(ev.process.log, ev.node_time or src.clock()):  # who grants it, for naming what took it away
            ev = dataclasses.replace(ev, grants=read_grants(src))
        diff = compare(ev)
        # maybe a change in flight between the two reads: look again, unless kube-proxy had synced before rules it
        # writes atomically were all gone (a firewall flushing them, at whose next pass a second read may miss it)
        if diff is not None and not diff.in_step and not wiped_after_a_sync(ev, diff):
            time.sleep(RECHECK_AFTER)
            ev = self._read(src, node, fresh=True)
        return ev

    def _read(self, src: Sources, node: str, *, fresh: bool) -> KubeProxyEvidence:
        """The first look reads the API beside the rules (in the node round-trip the other diagnosers share); a look
        again after a difference reads the API first, so that the rules it compares may only be newer."""
        if fresh:
            services, slices = src.api.fetch(SERVICES, fresh=True), src.api.fetch(SLICES, fresh=True)
            return self._node_side(src, node, lambda: services, lambda: slices)
        return self._node_side(src, node, src.api.soon(SERVICES), src.api.soon(SLICES))

    def _node_side(
        self, src: Sources, node: str, services: Callable[[], Fetched], slices: Callable[[], Fetched]
    ) -> KubeProxyEvidence:
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
            services=services(),
            slices=slices(),
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
            rules(self.p, ev),
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
        if refused := _refused(ev):
            return Assessed(e, (refused,))
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
                        f"kube-proxy on {ev.node} syncs at most every {seconds(ev.min_sync_period)} (minSyncPeriod)",
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
        waiting = change_waiting(ev) or 0.0
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
                    f"kube-proxy on {ev.node} has not synced a change queued {seconds(waiting)} ago",
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


def _refused(ev: KubeProxyEvidence) -> Finding | None:
    """kube-proxy refused by the API server's authorizer (403) in its log's last minute: it cannot read the Services
    and endpoints it programs, so it is not the process that is broken but its permission, named as the binding."""
    return refused(
        kp.IDENTITY,
        ev.node,
        fresh(ev.process.log, ev.node_time),
        ev.grants,
        f"it cannot watch Services and endpoints, so the rules on {ev.node} stop following them (and a restarted "
        "kube-proxy never syncs)",
        "kube-proxy's log",
        affects=(f"node/{ev.node}", "component/kube-proxy"),
    )
