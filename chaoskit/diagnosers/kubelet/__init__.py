"""kubelet diagnosis, per node: the document's troubleshooting points are `kubectl describe node` (conditions,
heartbeat) and `journalctl -u kubelet`; its faults are a stopped kubelet, a client certificate that could not
rotate, a runtime that does not answer (PLEG) and DiskPressure.

The node-side evidence (systemd, /healthz, the certificate, the journal, the disk) is read inside the node and so
survives an unreachable API server; kubelet's own /metrics and verbose /healthz are asked from the control-plane
node with the API server's kubelet-client certificate, as the API server itself would.
"""

from __future__ import annotations

from chaoskit.components import kubelet
from chaoskit.components.leases import LeaseState
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Finding, register
from chaoskit.diagnosers.kit.common import (
    HttpAnswer,
    api_unavailable,
    excerpt,
    failing_checks,
    http_command,
    matching,
    metrics_of,
    uncollected,
    unread,
)
from chaoskit.diagnosers.kit.leases import lease_evidence
from chaoskit.diagnosers.kit.sources import Sources
from chaoskit.diagnosers.kubelet.evidence import (
    API_REACH,
    CLIENT_PEM,
    JOURNAL,
    KUBELET_DIR,
    KubeletEvidence,
    KubeletParams,
    node_condition,
    node_conditions,
    recent,
    used_percent,
)
from chaoskit.diagnosers.kubelet.node import client_cert, forbidden, pleg, pressure
from chaoskit.diagnosers.kubelet.partition import partition
from chaoskit.figures import seconds
from chaoskit.seams.certs import KUBELET_CLIENT_CERT, KUBELET_CLIENT_KEY, cert_dates_command, expiry, parse_not_after
from chaoskit.seams.scrape import scrape_command


@register
class KubeletDiagnoser(Diagnoser[KubeletEvidence, KubeletParams]):
    """kubelet on each node: service, /healthz and sync loop, Ready, heartbeat lease, reach to the API server,
    pressure, client cert, PLEG."""

    component = "kubelet"
    per_node = True
    out_of_reach_too = True  # its node's Ready condition, lease and pods are in the API
    Params = KubeletParams

    def collect(self, src: Sources, node: str) -> KubeletEvidence:
        node_obj = src.api.soon(f"/api/v1/nodes/{node}")  # read while the scripts run
        lease = src.api.soon(kubelet.node_lease(node))
        pods = src.api.soon("/api/v1/pods", fieldSelector=f"spec.nodeName={node}")
        cert = f"--cert {KUBELET_CLIENT_CERT} --key {KUBELET_CLIENT_KEY} "
        s, remote = src.side_by_side(
            (
                node,
                {
                    "service": "systemctl is-active kubelet; systemctl show kubelet -p NRestarts --value",
                    "healthz": http_command(kubelet.HEALTHZ, max_time=3),
                    "cert": cert_dates_command({"client": CLIENT_PEM}),
                    "disk": f"df -P {KUBELET_DIR} | tail -n 1",
                    "eviction": kubelet.EVICTION_HARD,
                    "journal": f"{JOURNAL} | tail -n 400",
                    "api_reach": API_REACH,
                },
            ),
            (  # kubelet's authenticated endpoints, asked from the control plane as the API server would
                src.control_plane,
                {
                    "healthz": http_command(kubelet.url(node, "/healthz?verbose"), max_time=5, extra=cert),
                    "metrics": scrape_command(
                        kubelet.url(node, "/metrics"), ("kubelet_pleg_", kubelet.POD_START_SLI), client_cert=True
                    ),
                },
            ),
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
            disk_used_percent=used_percent(s["disk"].output),
            journal=s["journal"].output,
            node_obj=node_obj(),
            lease=lease(),
            api_reach=s["api_reach"],
            pods=pods(),
            eviction_hard=kubelet.eviction_hard(s["eviction"].output),
        )

    def assess(self, ev: KubeletEvidence) -> list[Assessed]:
        service = self._service(ev)
        rest = [
            self._ready(ev),
            self._heartbeat(ev),
            partition(self.p, ev),
            pressure(self.p, ev),
            client_cert(self.p, ev),
            pleg(self.p, ev),
            forbidden(self.p, ev),
            self._journal(ev),
        ]
        # a kubelet that is not running explains its node's NotReady and silent lease: one root, not three
        stopped = next((f for f in service.findings if f.severity == "critical"), None)
        return [service, *(c.because_of(stopped, ev.node) for c in rest)] if stopped else [service, *rest]

    def _service(self, ev: KubeletEvidence) -> Assessed:
        h, v = ev.healthz, ev.healthz_verbose
        failing = failing_checks(v.body) if v.answered else []
        e = Evidence(
            "service",
            f"systemctl is-active kubelet; curl {kubelet.HEALTHZ} on {ev.node}; /healthz?verbose on :{kubelet.PORT}",
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
        lines = recent(self.p, ev, "expired", "failed to run kubelet", "error", "fail")
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
        ready = node_condition(ev.node_obj.data, "Ready")
        taints = [f"{t.get('key')}:{t.get('effect')}" for t in ev.node_obj.data.get("spec", {}).get("taints") or []]
        e = Evidence(
            "node-ready",
            f"GET {path}",
            {"ready": ready.get("status"), "reason": ready.get("reason"), "taints": ", ".join(taints) or None},
            conditions=node_conditions(ev.node_obj.data),
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
        e = lease_evidence(lease, "heartbeat", path)
        if not lease.stale(self.p.heartbeat_grace):
            return Assessed(e)
        since = "never" if lease.age is None else f"{seconds(lease.age)} ago"
        return Assessed(
            e,
            (
                Finding(
                    "critical",
                    "kubelet",
                    f"kubelet on {ev.node} stopped heartbeating: node lease renewed {since}",
                    f"kubelet renews its lease every 10 s; past {seconds(lease.duration)} the node controller marks "
                    "the node NotReady (Unknown) and, after the toleration period, evicts its pods",
                    (e,),
                    (f"systemctl status kubelet and journalctl -u kubelet on {ev.node}",),
                ),
            ),
        )

    def _journal(self, ev: KubeletEvidence) -> Assessed:
        lines = excerpt(ev.journal, ("PLEG", "expired", "runtime"))
        return Assessed(Evidence("journal", f"{JOURNAL} on {ev.node}", {"error_lines": len(lines)}, log_lines=lines))
