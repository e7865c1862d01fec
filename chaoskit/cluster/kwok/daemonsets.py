"""DaemonSets kept off simulated nodes: kwok would report their pods Running there, with nothing running.

A simulated node's taint keeps ordinary pods away, but kube-proxy, the pod network (chaoskit's netd, or kind's
kindnet) and chaoskit's node agent tolerate every taint, as node daemons do. Their pod templates get a required
node affinity `type NotIn [kwok]`, ANDed into every term they already have: node selector terms are ORed, so a term
of its own would let the pods back onto any node another term picks.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any, Final

from chaoskit.model.kwok import SIMULATED_LABEL, TAINT

Obj = dict[str, Any]

NOT_SIMULATED: Final = {"key": SIMULATED_LABEL[0], "operator": "NotIn", "values": [SIMULATED_LABEL[1]]}
# the cluster's own DaemonSets and chaoskit's; a user's DaemonSet elsewhere is named, never changed
NAMESPACES: Final = ("kube-system", "chaoskit-system")


def tolerates(tolerations: Iterable[Obj], taint: Obj = TAINT) -> bool:
    """Whether a pod with `tolerations` may be placed on a node with `taint`, as the scheduler decides it."""
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t.get("key") == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _pod_spec(ds: Obj) -> Obj:
    return ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}


def _terms(ds: Obj) -> list[Obj]:
    affinity = (_pod_spec(ds).get("affinity") or {}).get("nodeAffinity") or {}
    return list((affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])


def _keeps_off(term: Obj) -> bool:
    return NOT_SIMULATED in (term.get("matchExpressions") or [])


def affinity_patch(ds: Obj) -> Obj | None:
    """A JSON merge patch that keeps `ds`'s pods off simulated nodes and changes nothing else of its affinity; None
    when every term already does. The whole term list is in it (a merge patch replaces lists), with the
    DaemonSet's resourceVersion, so a change made since it was read is refused (409) rather than overwritten."""
    terms = _terms(ds)
    if terms and all(_keeps_off(t) for t in terms):
        return None
    added = []
    for term in terms or [{}]:
        term = copy.deepcopy(term)
        if not _keeps_off(term):
            term["matchExpressions"] = [*(term.get("matchExpressions") or []), dict(NOT_SIMULATED)]
        added.append(term)
    required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": added}}
    patch: Obj = {"spec": {"template": {"spec": {"affinity": {"nodeAffinity": required}}}}}
    if version := (ds.get("metadata") or {}).get("resourceVersion"):
        patch["metadata"] = {"resourceVersion": version}
    return patch


def lands_on_simulated(ds: Obj) -> bool:
    """Whether the DaemonSet would place a pod on a simulated node: it tolerates the taint and no term keeps it off."""
    terms = _terms(ds)
    return tolerates(_pod_spec(ds).get("tolerations") or []) and not (terms and all(_keeps_off(t) for t in terms))


def to_patch(daemonsets: Iterable[Obj]) -> tuple[list[Obj], list[Obj]]:
    """(the DaemonSets to patch: the cluster's and chaoskit's that would land on simulated nodes, everybody else's
    that would: left as they are, to be named)."""
    landing = [d for d in daemonsets if lands_on_simulated(d)]
    ours = [d for d in landing if (d.get("metadata") or {}).get("namespace") in NAMESPACES]
    return ours, [d for d in landing if d not in ours]
