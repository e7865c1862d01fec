"""kube-scheduler: its process and static pod, where it answers, its leader lease, and what its FailedScheduling
events say: the reasons a working scheduler gives for a pod no node fits, and the objects that make it so."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chaoskit.components.common import leader_lease, local_url, manifest
from chaoskit.components.placement import blocked_by_policy, untolerated, wants
from chaoskit.components.rbac import Identity
from chaoskit.model.timeline import api_time

PROCESS = "kube-scheduler"
MANIFEST = manifest(PROCESS)
PORT = 10259
HEALTHZ = local_url(PORT, "/healthz")
METRICS_URL = local_url(PORT, "/metrics")
LEASE = leader_lease(PROCESS)
# whom the API server sees in its requests, and the RBAC bootstrap policy's binding of it
IDENTITY = Identity("scheduler", "system:kube-scheduler", "--user=system:kube-scheduler")

Obj = Mapping[str, Any]
SYSTEM_TAINTS = ("node-role.kubernetes.io/", "node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")


UNTOLERATED_TAINT = "untolerated taint"  # v1.34's TaintToleration filter no longer names the taint


@dataclass(frozen=True)
class Reason:
    """One kind of FailedScheduling reason: its words in the message (kube-scheduler's filter plugins'), what it
    means, and what to do."""

    needle: str
    label: str
    cause: str
    fix: tuple[str, ...]


REASONS: dict[str, Reason] = {
    "resources": Reason(
        "Insufficient ",
        "insufficient resources",
        "no node has enough unrequested CPU or memory for the pods' requests (an HPA scale-up that outgrew the "
        "cluster, or requests set too high)",
        (
            "lower the pods' resource requests, or add nodes (a cluster autoscaler)",
            "cap the HPA's maxReplicas at what the cluster can hold",
            "kubectl describe nodes: compare Allocatable with Allocated resources",
        ),
    ),
    "cordoned": Reason(
        "were unschedulable",
        "cordoned node",
        "the pods' nodeSelector/affinity pins them to nodes that are all cordoned (spec.unschedulable)",
        ("kubectl uncordon the node, or unpin the workload (its nodeSelector/affinity)",),
    ),
    "taint": Reason(
        UNTOLERATED_TAINT,
        UNTOLERATED_TAINT,
        "the nodes that could take the pods carry NoSchedule taints the pods do not tolerate",
        (
            "kubectl get nodes -o custom-columns=NAME:.metadata.name,TAINTS:.spec.taints",
            "remove the taint (kubectl taint nodes NODE KEY:NoSchedule-) or add a toleration to the pods",
        ),
    ),
    "affinity": Reason(
        "didn't match Pod's node affinity/selector",
        "node affinity/selector",
        "the pods' nodeSelector or required node affinity matches no node's labels",
        (
            "compare the pod's nodeSelector/affinity with kubectl get nodes --show-labels",
            "fix the label on the nodes or the affinity on the workload",
        ),
    ),
    "ports": Reason(
        "didn't have free ports",
        "host ports",
        "the pods ask for host ports that every fitting node already uses",
        ("drop hostPort, or spread the pods",),
    ),
    "volumes": Reason(
        "volume",
        "volume placement",
        "the pods' volumes cannot be placed with them (zone or node affinity of the volume)",
        ("kubectl describe pvc for the pods' claims",),
    ),
}
OTHER = Reason("", "no node fits", "the scheduler's filters rule out every node", ())
_PER_NODE = re.compile(r"nodes are available: (.*?)(?:\.\s|\.$|$)")


def latest_failed_scheduling(events: Sequence[Obj]) -> dict[str, str]:
    """The newest FailedScheduling message per pod (namespace/name)."""
    newest: dict[str, tuple[float, str]] = {}
    for e in events:
        obj = e.get("involvedObject") or e.get("regarding") or {}
        if obj.get("kind") != "Pod":
            continue
        key = f"{obj.get('namespace', '')}/{obj.get('name', '')}"
        when = max(
            api_time(e.get("lastTimestamp")) or 0.0,
            api_time(e.get("eventTime")) or 0.0,
            api_time((e.get("series") or {}).get("lastObservedTime")) or 0.0,
        )
        if key not in newest or when >= newest[key][0]:
            newest[key] = (when, str(e.get("message") or e.get("note") or ""))
    return {k: m for k, (_, m) in newest.items()}


def per_node(message: str) -> str:
    """What a FailedScheduling message says of the nodes: its words after "nodes are available:", to the first stop."""
    m = _PER_NODE.search(message)
    return (m.group(1) if m else message).strip()


def reasons(message: str) -> list[str]:
    """The kinds of reasons a FailedScheduling message gives, in REASONS' terms ("other" when none fits): what the
    diagnosers name and what a fault that makes pods unschedulable checks its events for."""
    text = per_node(message).lower()
    return [name for name, r in REASONS.items() if r.needle.lower() in text] or ["other"]


def classify(pod: Obj, message: str, nodes: Sequence[Obj]) -> tuple[str, str]:
    """The reason that blocks the pod, in REASONS' terms, and what shows it.

    Lack of resources is named by the message itself; a cordon, taints or an affinity need the pod and the nodes
    (kube-scheduler names only the first filter that failed on each node); the message's order decides the rest."""
    kinds = reasons(message)
    said = per_node(message)
    if "resources" in kinds:
        return "resources", said
    wanted = [n for n in nodes if wants(pod, n)]
    cordoned = [n for n in wanted if (n.get("spec") or {}).get("unschedulable")]
    if wanted and len(cordoned) == len(wanted):
        return "cordoned", f"cordoned: {', '.join(_name(n) for n in cordoned)}"
    policy = blocked_by_policy(pod, nodes)
    if policy is not None:
        return policy
    return next((k for k in ("ports", "volumes", "cordoned", "taint", "affinity") if k in kinds), "other"), said


def blockers(pod: Obj, reason: str, nodes: Sequence[Obj]) -> tuple[str, ...]:
    """The nodes whose state keeps the pod out, as entities: the cordoned or tainted nodes it wants (for those
    reasons); none when the pod's own spec is the whole cause (its requests, its affinity)."""
    wanted = [n for n in nodes if wants(pod, n)]
    if reason == "cordoned":
        return tuple(f"node/{_name(n)}" for n in wanted if (n.get("spec") or {}).get("unschedulable"))
    if reason == "taint":  # a taint Kubernetes sets itself (the control plane's, a condition's) is no one's doing
        return tuple(
            f"node/{_name(n)}" for n in wanted if any(not t.startswith(SYSTEM_TAINTS) for t in untolerated(pod, n))
        )
    return ()


def pinned(pod: Obj, nodes: Sequence[Obj]) -> bool:
    """The pod may go to fewer nodes than the cluster has: its nodeSelector or affinity narrows them."""
    return bool(nodes) and sum(1 for n in nodes if wants(pod, n)) < len(nodes)


def reason_of(name: str) -> Reason:
    return REASONS.get(name, OTHER)


def _name(node: Obj) -> str:
    return str((node.get("metadata") or {}).get("name", ""))
