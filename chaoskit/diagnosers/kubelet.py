"""kubelet diagnosis, per node: the document's troubleshooting points are `kubectl describe node` (conditions,
heartbeat) and `journalctl -u kubelet`; its faults are a stopped kubelet, a client certificate that could not
rotate, a runtime that does not answer (PLEG) and DiskPressure.

The node-side evidence (systemd, /healthz, the certificate, the journal, the disk) is read inside the node and so
survives an unreachable API server; kubelet's own /metrics and verbose /healthz are asked from the control-plane
node with the API server's kubelet-client certificate, as the API server itself would.
"""

# Over 300 lines: one component's evidence and every judgement of it, read in one place (next: evidence apart).

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import Field

from chaoskit.components import kubelet
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Finding, register
from chaoskit.diagnosers.kit.common import (
    HttpAnswer,
    api_unavailable,
    excerpt,
    expiry_findings,
    failing_checks,
    http_command,
    iso,
    matching,
    metrics_of,
    rounded,
    uncollected,
    unread,
)
from chaoskit.diagnosers.kit.leases import LeaseState
from chaoskit.diagnosers.kit.sources import Fetched, Sources
from chaoskit.model.params import FaultParams
from chaoskit.seams.certs import KUBELET_CLIENT_CERT, KUBELET_CLIENT_KEY, cert_dates_command, expiry, parse_not_after
from chaoskit.seams.scrape import Metrics, scrape_command

KUBELET_DIR = kubelet.DIR
CLIENT_PEM = kubelet.CLIENT_PEM
PRESSURES = ("DiskPressure", "MemoryPressure", "PIDPressure")
JOURNAL = kubelet.JOURNAL
_JOURNAL_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}) ")


class KubeletParams(FaultParams):
    heartbeat_grace: float = Field(default=0.0, description="Seconds past the node lease's duration before stale.")
    pleg_warning: float = Field(default=30.0, description="Seconds since PLEG was last active: warning.")
    pleg_critical: float = Field(default=180.0, description="Seconds since PLEG was last active: critical (kubelet's).")
    disk_warning: float = Field(default=85.0, description="Percent used of kubelet's filesystem: warning.")
    cert_warning_days: float = Field(default=7.0, description="Client certificate expiring sooner: warning.")
    recent: float = Field(default=120.0, description="Seconds of journal that count as happening now.")


@dataclass(frozen=True)
class KubeletEvidence:
    node: str
    collected_at: float
    service: str  # systemctl is-active: active, activating, inactive, failed
    restarts: int | None  # systemd's NRestarts
    unread: str  # why systemctl's look did not finish (a loaded node cut it off): no verdict on the service then
    healthz: HttpAnswer  # http://127.0.0.1:10248/healthz inside the node
    healthz_verbose: HttpAnswer  # https://<node>:10250/healthz?verbose from the control plane (syncloop)
    metrics: Metrics  # kubelet's /metrics (PLEG)
    client_not_after: float | None
    disk_used_percent: float | None
    journal: str
    node_obj: Fetched
    lease: Fetched


@register
class KubeletDiagnoser(Diagnoser[KubeletEvidence, KubeletParams]):
    """kubelet on each node: service, /healthz and sync loop, Ready, heartbeat lease, pressure, client cert, PLEG."""

    component = "kubelet"
    per_node = True
    Params = KubeletParams

    def collect(self, src: Sources, node: str) -> KubeletEvidence:
        s = src.sections(
            node,
            {
                "service": "systemctl is-active kubelet; systemctl show kubelet -p NRestarts --value",
                "healthz": http_command(kubelet.HEALTHZ, max_time=3),
                "cert": cert_dates_command({"client": CLIENT_PEM}),
                "disk": f"df -P {KUBELET_DIR} | tail -n 1",
                "journal": f"{JOURNAL} | tail -n 400",
            },
        )
        cert = f"--cert {KUBELET_CLIENT_CERT} --key {KUBELET_CLIENT_KEY} "
        remote = src.sections(
            src.control_plane,
            {
                "healthz": http_command(kubelet.url(node, "/healthz?verbose"), max_time=5, extra=cert),
                "metrics": scrape_command(kubelet.url(node, "/metrics"), ("kubelet_pleg_",), client_cert=True),
            },
        )
        service = s["service"].output.split()
        return KubeletEvidence(
            node=node,
            collected_at=src.clock(),
            service=service[0] if service else "unknown",
            restarts=int(service[1]) if len(service) > 1 and service[1].isdigit() else None,
            unread=unread(s["service"]),
            healthz=HttpAnswer.of(s["healthz"]),
            healthz_verbose=HttpAnswer.of(remote["healthz"]),
            metrics=metrics_of(remote["metrics"]),
            client_not_after=parse_not_after(s["cert"].output).get("client"),
            disk_used_percent=_used_percent(s["disk"].output),
            journal=s["journal"].output,
            node_obj=src.api.fetch(f"/api/v1/nodes/{node}"),
            lease=src.api.fetch(kubelet.node_lease(node)),
        )

    def assess(self, ev: KubeletEvidence) -> list[Assessed]:
        return [
            self._service(ev),
            self._ready(ev),
            self._heartbeat(ev),
            self._pressure(ev),
            self._client_cert(ev),
            self._pleg(ev),
            self._journal(ev),
        ]

    def _recent(self, ev: KubeletEvidence, *needles: str, after: float | None = None) -> tuple[str, ...]:
        """Journal lines from the last `recent` seconds (and after `after`) that contain one of `needles`."""
        lines = []
        for line in ev.journal.splitlines():
            m = _JOURNAL_TIME.match(line)
            when = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S%z").timestamp() if m else None
            if when is not None and (ev.collected_at - when > self.p.recent or (after is not None and when < after)):
                continue
            lines.append(line)
        return matching(lines, *needles)[-8:]

    def _service(self, ev: KubeletEvidence) -> Assessed:
        h, v = ev.healthz, ev.healthz_verbose
        failing = failing_checks(v.body) if v.answered else []
        e = Evidence(
            "service",
            f"systemctl is-active kubelet; curl 127.0.0.1:10248/healthz on {ev.node}; /healthz?verbose on :10250",
            {
                "systemd": ev.service,
                "restarts": ev.restarts,
                "healthz": h.describe(),
                "healthz_verbose": v.describe(),
                "failing": ", ".join(failing) or None,
            },
        )
        if ev.unread:
            return Assessed(e, (uncollected("kubelet", ev.node, "the kubelet service", ev.unread, e),))
        if ev.service != "active":
            return self._not_running(ev, e)
        if h.unread and "syncloop" not in failing:
            return Assessed(e, (uncollected("kubelet", ev.node, "/healthz", h.unread, e),))
        if not h.answered or "syncloop" in failing:
            what = "its sync loop is stuck ([-]syncloop)" if "syncloop" in failing else "/healthz does not answer"
            return Assessed(
                e,
                (
                    Finding(
                        "critical",
                        "kubelet",
                        f"kubelet on {ev.node} is running but {what}",
                        "kubelet hangs: typically on a container runtime that does not answer",
                        (e,),
                        (
                            f"crictl info on {ev.node}: does containerd answer? (chaoskit diagnose containerd)",
                            f"journalctl -u kubelet -n 100 on {ev.node}",
                        ),
                    ),
                ),
            )
        return Assessed(e)

    def _not_running(self, ev: KubeletEvidence, e: Evidence) -> Assessed:
        """kubelet's service down: its journal says why, an expired client certificate the most common."""
        lines = self._recent(ev, "expired", "failed to run kubelet", "error", "fail")
        cert_expired = bool(matching(lines, "expired")) or (
            expiry(ev.client_not_after, ev.collected_at, self.p.cert_warning_days) == "expired"
        )
        cause = (
            "kubelet exits at start because its client certificate has expired and cannot be renewed; "
            "systemd restarts it in a loop"
            if cert_expired
            else "kubelet is stopped or exits at start (its journal says why)"
        )
        e2 = Evidence("service", e.source, e.observed, log_lines=lines)
        return Assessed(
            e2,
            (
                Finding(
                    "critical",
                    "kubelet",
                    f"kubelet is not running on {ev.node} (systemd: {ev.service})",
                    f"{cause}; the node stops heartbeating and goes NotReady after the grace period",
                    (e2,),
                    (
                        f"journalctl -u kubelet -n 50 on {ev.node}",
                        f"systemctl start kubelet on {ev.node}"
                        if not cert_expired
                        else f"restore a valid {CLIENT_PEM} (or rejoin the node with kubeadm) and restart kubelet",
                    ),
                ),
            ),
        )

    def _ready(self, ev: KubeletEvidence) -> Assessed:
        path = f"/api/v1/nodes/{ev.node}"
        if not ev.node_obj.ok:
            return api_unavailable("kubelet", "node-ready", f"GET {path}", ev.node_obj.error)
        ready = _condition(ev.node_obj.data, "Ready")
        taints = [f"{t.get('key')}:{t.get('effect')}" for t in ev.node_obj.data.get("spec", {}).get("taints") or []]
        e = Evidence(
            "node-ready",
            f"GET {path}",
            {"ready": ready.get("status"), "reason": ready.get("reason"), "taints": ", ".join(taints) or None},
            conditions=_conditions(ev.node_obj.data),
        )
        status = ready.get("status")
        if status == "True":
            return Assessed(e)
        message = str(ready.get("message") or "")
        if status == "Unknown":
            title = f"Node {ev.node} is NotReady: kubelet stopped posting status ({ready.get('reason', '')})"
            cause = (
                "the node controller has not heard from kubelet within the grace period (kubelet stopped, "
                "hung, cut off from the API server, or unable to authenticate); it taints the node and evicts pods"
            )
        else:
            title = f"Node {ev.node} is NotReady: {message[:160]}"
            cause = "kubelet reports the node not ready: " + (
                "PLEG is not healthy (the container runtime does not answer relists)"
                if "PLEG" in message
                else "the container runtime is down"
                if "runtime is down" in message or "runtime" in message.lower()
                else "the pod network is not ready"
                if "network" in message.lower()
                else message or "see the message"
            )
        return Assessed(
            e,
            (
                Finding(
                    "critical",
                    "kubelet",
                    title,
                    cause,
                    (e,),
                    (f"kubectl describe node {ev.node}: conditions and events", f"journalctl -u kubelet on {ev.node}"),
                ),
            ),
        )

    def _heartbeat(self, ev: KubeletEvidence) -> Assessed:
        path = kubelet.node_lease(ev.node)
        if not ev.lease.ok:
            return api_unavailable("kubelet", "heartbeat", f"GET {path}", ev.lease.error)
        lease = LeaseState.of(ev.lease.data, ev.collected_at)
        e = lease.evidence("heartbeat", path)
        if not lease.stale(self.p.heartbeat_grace):
            return Assessed(e)
        since = "never" if lease.age is None else f"{lease.age:.0f}s ago"
        return Assessed(
            e,
            (
                Finding(
                    "critical",
                    "kubelet",
                    f"kubelet on {ev.node} stopped heartbeating: node lease renewed {since}",
                    f"kubelet renews its lease every 10 s; past {lease.duration:g}s the node controller marks the node "
                    "NotReady (Unknown) and, after the toleration period, evicts its pods",
                    (e,),
                    (f"systemctl status kubelet and journalctl -u kubelet on {ev.node}",),
                ),
            ),
        )

    def _pressure(self, ev: KubeletEvidence) -> Assessed:
        source = f"node conditions (GET /api/v1/nodes/{ev.node}); df -P {KUBELET_DIR} on {ev.node}"
        conditions = {k: _condition(ev.node_obj.data, k) for k in PRESSURES} if ev.node_obj.ok else {}
        under = {k: c for k, c in conditions.items() if c.get("status") == "True"}
        e = Evidence(
            "pressure",
            source,
            {
                "disk_used_percent": ev.disk_used_percent,
                **{k: c.get("status") for k, c in conditions.items()},
                "api": None if ev.node_obj.ok else ev.node_obj.error,
            },
        )
        findings = []
        for kind, c in under.items():
            findings.append(
                Finding(
                    "critical",
                    "kubelet",
                    f"{kind} on {ev.node}: {c.get('message', '')}",
                    f"kubelet's eviction thresholds are crossed: the node is tainted "
                    f"node.kubernetes.io/{kind.removesuffix('Pressure').lower()}-pressure (no new pods) and kubelet "
                    "evicts pods to reclaim"
                    + (
                        f" ({KUBELET_DIR} {ev.disk_used_percent:g}% used)"
                        if kind == "DiskPressure" and ev.disk_used_percent is not None
                        else ""
                    ),
                    (e,),
                    (
                        f"du -xsh {KUBELET_DIR}/* on {ev.node}: find what fills it; crictl rmi --prune for images",
                        "the condition clears evictionPressureTransitionPeriod after the pressure ends",
                    )
                    if kind == "DiskPressure"
                    else (f"kubectl describe node {ev.node}",),
                )
            )
        if not under and ev.disk_used_percent is not None and ev.disk_used_percent >= self.p.disk_warning:
            findings.append(
                Finding(
                    "warning",
                    "kubelet",
                    f"{KUBELET_DIR} on {ev.node} is {ev.disk_used_percent:g}% full",
                    "close to kubelet's eviction threshold: DiskPressure and evictions follow",
                    (e,),
                    (f"du -xsh {KUBELET_DIR}/* on {ev.node}",),
                )
            )
        return Assessed(e, tuple(findings))

    def _client_cert(self, ev: KubeletEvidence) -> Assessed:
        lines = self._recent(ev, "expired", "certificate", "x509")
        e = Evidence(
            "client-certificate",
            f"openssl x509 -enddate -in {CLIENT_PEM} on {ev.node}",
            {"not_after": iso(ev.client_not_after)},
            log_lines=lines,
        )
        fix = (
            f"if rotation is on, kubelet renews it itself while it is still valid: check "
            f"journalctl -u kubelet | grep -i certificate on {ev.node}",
            "an expired one cannot be renewed: rejoin the node (kubeadm join) or sign a new client certificate",
        )
        return Assessed(
            e,
            expiry_findings(
                "kubelet",
                f"kubelet client certificate on {ev.node}",
                ev.client_not_after,
                ev.collected_at,
                self.p.cert_warning_days,
                e,
                "kubelet cannot authenticate to the API server and the node goes NotReady "
                "(rotation should have renewed it before, at ~70-90% of its life)",
                fix,
            ),
        )

    def _pleg(self, ev: KubeletEvidence) -> Assessed:
        last_seen = ev.metrics.total("kubelet_pleg_last_seen_seconds")
        since = None if last_seen is None else max(0.0, ev.collected_at - last_seen)
        relist = ev.metrics.histogram("kubelet_pleg_relist_duration_seconds")
        # every kubelet start logs "PLEG is not healthy: pleg has yet to be successful": only complaints PLEG has
        # not answered since (by relisting after them) count
        lines = self._recent(
            ev, "PLEG is not healthy", "pleg was last seen", after=None if last_seen is None else last_seen - 1
        )
        ready_msg = str(_condition(ev.node_obj.data, "Ready").get("message", "")) if ev.node_obj.ok else ""
        e = Evidence(
            "pleg",
            f"kubelet_pleg_* from https://{ev.node}:10250/metrics; journalctl -u kubelet",
            {
                "last_active_s_ago": None if since is None else round(since, 1),
                "metrics": "ok" if ev.metrics else ev.metrics.error[:160],
            },
            log_lines=lines,
            metrics=rounded([("relist_mean_s", relist.mean if relist else None)], 5),
        )
        unhealthy = "PLEG is not healthy" in ready_msg or bool(lines)
        if unhealthy or (since is not None and since > self.p.pleg_critical):
            return Assessed(
                e,
                (
                    Finding(
                        "critical",
                        "kubelet",
                        f"PLEG is not healthy on {ev.node}"
                        + (f" (last active {since:.0f}s ago)" if since is not None else ""),
                        "kubelet's pod lifecycle event generator cannot relist containers: the container runtime does "
                        "not "
                        "answer (frozen or overloaded containerd) — the node goes NotReady and pods stop starting",
                        (e,),
                        (
                            f"crictl info and crictl ps on {ev.node} (chaoskit diagnose containerd)",
                            f"systemctl status containerd on {ev.node}; restart it if it hangs",
                        ),
                    ),
                ),
            )
        if since is not None and since > self.p.pleg_warning:
            return Assessed(
                e,
                (
                    Finding(
                        "warning",
                        "kubelet",
                        f"PLEG on {ev.node} last active {since:.0f}s ago (relists every 1 s)",
                        "relisting is slow or stalled: the container runtime answers slowly",
                        (e,),
                        (f"crictl info on {ev.node}",),
                    ),
                ),
            )
        return Assessed(e)

    def _journal(self, ev: KubeletEvidence) -> Assessed:
        lines = excerpt(ev.journal, ("PLEG", "expired", "runtime"))
        return Assessed(Evidence("journal", f"{JOURNAL} on {ev.node}", {"error_lines": len(lines)}, log_lines=lines))


def _condition(node: Any, kind: str) -> dict[str, Any]:
    if not isinstance(node, dict):
        return {}
    for c in node.get("status", {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return {}


def _conditions(node: dict[str, Any]) -> tuple[str, ...]:
    return tuple(
        f"{c.get('type')}={c.get('status')} {c.get('reason', '')}: {c.get('message', '')}".strip()
        for c in node.get("status", {}).get("conditions") or []
    )


def _used_percent(df_line: str) -> float | None:
    fields = df_line.split()
    if len(fields) >= 5 and fields[4].endswith("%") and fields[4][:-1].isdigit():
        return float(fields[4][:-1])
    return None
