"""Which nodes a pod may go to (nodeSelector, required node affinity) and which of their taints it does not
tolerate: what tells "no node fits the policy" apart from "the nodes it wants are tainted".

A FailedScheduling message alone cannot: kube-scheduler names only the first filter that failed on each node, so
a pod pinned to a tainted node and a pod whose affinity matches no node both read "1 node(s) had untolerated
taint(s), 2 node(s) didn't match Pod's node affinity/selector" on a cluster with a tainted control plane.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Obj = Mapping[str, Any]
BLOCKING = ("NoSchedule", "NoExecute")


def _expression(labels: Mapping[str, str], expr: Obj) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator", ""), [str(v) for v in expr.get("values") or []]
    value = labels.get(key)
    if op == "In":
        return value in values
    if op == "NotIn":
        return value not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and value is not None and values:
        try:
            return int(value) > int(values[0]) if op == "Gt" else int(value) < int(values[0])
        except ValueError:
            return False
    return False


def wants(pod: Obj, node: Obj) -> bool:
    """The node satisfies the pod's nodeSelector and required node affinity (terms ORed, expressions ANDed)."""
    spec = pod.get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    return any(all(_expression(labels, e) for e in t.get("matchExpressions") or []) for t in terms)


def _tolerates(toleration: Obj, taint: Obj) -> bool:
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration.get("key") == taint.get("key")
    return toleration.get("key") == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")


def untolerated(pod: Obj, node: Obj) -> list[str]:
    """The node's scheduling-blocking taints the pod does not tolerate, as key=value:effect."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    out = []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in BLOCKING and not any(_tolerates(t, taint) for t in tolerations):
            value = f"={taint['value']}" if taint.get("value") else ""
            out.append(f"{taint.get('key')}{value}:{taint.get('effect')}")
    return out


def blocked_by_policy(pod: Obj, nodes: Sequence[Obj]) -> tuple[str, str] | None:
    """("affinity", detail) when no node is wanted, ("taint", detail) when every wanted node has a taint the pod
    does not tolerate, None when some wanted node is neither (resources or something else then)."""
    if not nodes:
        return None
    wanted = [n for n in nodes if wants(pod, n)]
    if not wanted:
        return "affinity", f"no node among {len(nodes)} matches its nodeSelector/affinity"
    taints = {(n.get("metadata") or {}).get("name", ""): untolerated(pod, n) for n in wanted}
    if all(taints.values()):
        named = "; ".join(f"{name}: {', '.join(t)}" for name, t in taints.items())
        return "taint", f"every node it may go to has a taint it does not tolerate ({named})"
    return None
