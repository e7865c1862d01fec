"""What the node reports of itself beside kubelet's service: resource pressure, the client certificate kubelet talks
to the API server with, and PLEG (whether the runtime answers kubelet's relists)."""

from __future__ import annotations

from chaoskit.components import kubelet
from chaoskit.components.rbac import refusals
from chaoskit.diagnosers.kit.base import Assessed, Evidence, Finding
from chaoskit.diagnosers.kit.common import (
    expiry_findings,
    iso,
    rounded,
)
from chaoskit.diagnosers.kubelet.evidence import (
    CLIENT_PEM,
    JOURNAL,
    KUBELET_DIR,
    PRESSURES,
    KubeletEvidence,
    KubeletParams,
    node_condition,
    recent,
)
from chaoskit.figures import seconds


def pressure(p: KubeletParams, ev: KubeletEvidence) -> Assessed:
    source = f"node conditions (GET /api/v1/nodes/{ev.node}); df -P {KUBELET_DIR} on {ev.node}"
    conditions = {k: node_condition(ev.node_obj.data, k) for k in PRESSURES} if ev.node_obj.ok else {}
    under = {k: c for k, c in conditions.items() if c.get("status") == "True"}
    e = Evidence(
        "pressure",
        source,
        {
            "disk_used_percent": ev.disk_used_percent,
            "nodefs_available_threshold": ev.eviction_hard.get("nodefs.available"),
            **{k: c.get("status") for k, c in conditions.items()},
            "api": None if ev.node_obj.ok else ev.node_obj.error,
        },
    )
    findings = []
    for kind, c in under.items():
        if kind == "DiskPressure" and (misset := _threshold_not_disk(p, ev)):
            findings.append(misset)
            continue
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
    if not under and ev.disk_used_percent is not None and ev.disk_used_percent >= p.disk_warning:
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


def _threshold_not_disk(p: KubeletParams, ev: KubeletEvidence) -> Finding | None:
    """DiskPressure with the disk far from full: kubelet's nodefs.available threshold is set above the space that is
    free, so the threshold, not the disk, is the cause (as measured: df against the config file)."""
    wanted = kubelet.percent(ev.eviction_hard.get("nodefs.available"))
    if wanted is None or ev.disk_used_percent is None or ev.disk_used_percent >= p.disk_warning:
        return None
    free = 100.0 - ev.disk_used_percent
    if wanted < free:
        return None
    e = Evidence(
        "eviction-threshold",
        f"{kubelet.EVICTION_HARD}; df -P {KUBELET_DIR} on {ev.node}",
        {"nodefs_available_threshold": f"{wanted:g}%", "free_percent": free, "used_percent": ev.disk_used_percent},
    )
    return Finding(
        "critical",
        "kubelet",
        f"DiskPressure on {ev.node}: threshold nodefs.available {wanted:g}% ≥ free {free:g}%: "
        "the threshold, not the disk",
        f"kubelet's evictionHard nodefs.available<{wanted:g}% in {kubelet.CONFIG} asks for more free space than the "
        f"disk can have while it is {ev.disk_used_percent:g}% used: the node is tainted disk-pressure and kubelet "
        "evicts pods for a disk that is not full",
        (e,),
        (
            f"set evictionHard nodefs.available back (kubelet's default {kubelet.DEFAULT_NODEFS_AVAILABLE:g}%) in "
            f"{kubelet.CONFIG} on {ev.node}, then systemctl restart kubelet",
        ),
        entity=f"node/{ev.node}",
    )


def client_cert(p: KubeletParams, ev: KubeletEvidence) -> Assessed:
    lines = recent(p, ev, "expired", "certificate", "x509")
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
            p.cert_warning_days,
            e,
            "kubelet cannot authenticate to the API server and the node goes NotReady "
            "(rotation should have renewed it before, at ~70-90% of its life)",
            fix,
        ),
    )


PLEG_STARTING = "pleg has yet to be successful"  # every kubelet logs it from its start to its first relist


def pleg(p: KubeletParams, ev: KubeletEvidence) -> Assessed:
    last_seen = ev.metrics.total("kubelet_pleg_last_seen_seconds")
    since = None if last_seen is None else max(0.0, ev.collected_at - last_seen)
    relist = ev.metrics.histogram("kubelet_pleg_relist_duration_seconds")
    starts = ev.metrics.histogram(kubelet.POD_START_SLI)
    # every kubelet start logs "PLEG is not healthy: pleg has yet to be successful": only complaints PLEG has
    # not answered since (by relisting after them) count
    lines = recent(
        p, ev, "PLEG is not healthy", "pleg was last seen", after=None if last_seen is None else last_seen - 1
    )
    ready = node_condition(ev.node_obj.data, "Ready") if ev.node_obj.ok else {}
    ready_msg = str(ready.get("message", ""))
    if ready.get("status") == "True":  # kubelet posts Ready only once PLEG has relisted: its start complaint is over
        lines = tuple(line for line in lines if PLEG_STARTING not in line)
    e = Evidence(
        "pleg",
        f"kubelet_pleg_* from https://{ev.node}:{kubelet.PORT}/metrics; journalctl -u kubelet",
        {
            "last_active_s_ago": None if since is None else round(since, 1),
            "metrics": "ok" if ev.metrics else ev.metrics.error[:160],
        },
        log_lines=lines,
        metrics=rounded(
            [
                ("relist_mean_s", relist.mean if relist else None),
                ("pod_start_sli_p99_s_since_start", starts.quantile(0.99) if starts else None),  # evidence, no verdict
            ],
            5,
        ),
    )
    unhealthy = "PLEG is not healthy" in ready_msg or bool(lines)
    if unhealthy or (since is not None and since > p.pleg_critical):
        return Assessed(
            e,
            (
                Finding(
                    "critical",
                    "kubelet",
                    f"PLEG is not healthy on {ev.node}"
                    + (f" (last active {seconds(since)} ago)" if since is not None else ""),
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
    if since is not None and since > p.pleg_warning:
        return Assessed(
            e,
            (
                Finding(
                    "warning",
                    "kubelet",
                    f"PLEG on {ev.node} last active {seconds(since)} ago (relists every 1 s)",
                    "relisting is slow or stalled: the container runtime answers slowly",
                    (e,),
                    (f"crictl info on {ev.node}",),
                ),
            ),
        )
    return Assessed(e)


def since_credentials(lines: tuple[str, ...]) -> tuple[str, ...]:
    """The lines after kubelet last changed its client certificate: a refusal before it was another identity's (the
    anonymous one of TLS bootstrap, an expired certificate since renewed), not the credentials kubelet uses now."""
    rotated = [i for i, line in enumerate(lines) if kubelet.CREDENTIALS_ROTATED in line]
    return lines[rotated[-1] + 1 :] if rotated else lines


def forbidden(p: KubeletParams, ev: KubeletEvidence) -> Assessed:
    """kubelet refused by the API server's authorizer (403) lately: the Node authorizer grants a kubelet only what
    its own node needs, so a refusal says its credentials name another node, or the API server runs without the Node
    authorizer; the cause is that identity, not the kubelet process."""
    expected = f"{kubelet.NODE_USER_PREFIX}{ev.node}"
    # the Node authorizer's "no relationship found" for its own identity is routine: an object deleted (a pod, its
    # namespace) before kubelet stopped asking for it
    found = [
        r
        for line in since_credentials(recent(p, ev, "forbidden", kubelet.CREDENTIALS_ROTATED))
        for r in refusals(line, ev.collected_at)
        if r.who != expected or kubelet.ROUTINE_REFUSAL not in line
    ]
    e = Evidence(
        "permissions",
        f"{JOURNAL} on {ev.node} (403s)",
        {"refused": len(found)},
        log_lines=tuple(f"{r.who} cannot {r.words()}" for r in found[-3:]),
    )
    if not found:
        return Assessed(e)
    last = found[-1]
    why = (
        f"its credentials say {last.who}, not {expected}: the client certificate in kubelet.conf belongs to another "
        "node"
        if last.who != expected
        else "the API server's --authorization-mode lacks Node, or NodeRestriction refuses an object that is not "
        "this node's"
    )
    return Assessed(
        e,
        (
            Finding(
                "critical",
                "kubelet",
                f"kubelet on {ev.node} is forbidden: {last.who} cannot {last.words()} (403)",
                f"the API server's authorizer refuses kubelet: {why}; the node's status, lease and pods stop being "
                "reported",
                (e,),
                (
                    f"kubectl auth can-i {last.verb} {last.resource} --as={last.who} --as-group=system:nodes",
                    "check --authorization-mode=Node,RBAC in the API server's manifest, and the CN of kubelet's "
                    "client certificate (openssl x509 -noout -subject)",
                ),
                entity=f"user/{last.who}",
                affects=(f"node/{ev.node}", "component/kubelet"),
            ),
        ),
    )
