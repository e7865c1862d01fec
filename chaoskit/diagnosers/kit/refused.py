"""A component refused by the API server's authorizer (403), judged the same way for every component identity:
the refusal in its own log names who was refused what, and the cause is the binding that should grant it (gone), or
the identity (bound, but its role lacks the rule) — never the component, which only carries the message."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chaoskit.components.rbac import (
    CLUSTERROLEBINDINGS,
    CLUSTERROLES,
    FRESH_S,
    Identity,
    Refusal,
    granted,
    names,
    refusals,
)
from chaoskit.diagnosers.kit.base import Evidence, Finding
from chaoskit.diagnosers.kit.common import items
from chaoskit.diagnosers.kit.sources import Fetched, Sources


@dataclass(frozen=True)
class Grants:
    """The cluster's RBAC now, read only when a log shows a refusal: who is bound, and what the roles allow."""

    bindings: Fetched
    roles: Fetched

    @property
    def ok(self) -> bool:
        return self.bindings.ok and self.roles.ok


def read_grants(src: Sources) -> Grants:
    bindings, roles = src.api.soon(CLUSTERROLEBINDINGS), src.api.soon(CLUSTERROLES)
    return Grants(bindings(), roles())


def fresh(log: str, now: float | None) -> list[Refusal]:
    """The refusals logged in the last two retry periods before `now` (the node's clock; else the newest line's)."""
    at = now or max((r.at or 0.0 for r in refusals(log, 0.0)), default=0.0)
    return [r for r in refusals(log, at) if r.at is None or at - r.at <= 2 * FRESH_S]


def refused(
    who: Identity,
    node: str,
    found: Sequence[Refusal],
    grants: Grants | None,
    effect: str,
    source: str,
    affects: tuple[str, ...] = (),
) -> Finding | None:
    """The finding for a component whose requests are refused now: its binding gone, or its role short of a rule.
    A refusal the RBAC grants now is history (logged before a fix)."""
    if grants is not None and grants.ok:
        found = [r for r in found if not granted(r, items(grants.roles), items(grants.bindings))]
    if not found:
        return None
    last = found[-1]
    bindings = grants.bindings if grants else None
    binding = next((b for b in items(bindings) if b["metadata"]["name"] == who.binding), None) if bindings else None
    bound = binding is not None and any(names(s, last.who) for s in binding.get("subjects") or [])
    entity = f"clusterrole/{who.cluster_role}" if bound else f"clusterrolebinding/{who.binding}"
    if bound:
        why = f"its ClusterRoleBinding {who.binding} stands, but the ClusterRole {who.cluster_role} lacks this rule"
    elif binding is not None:
        why = f"its ClusterRoleBinding {who.binding} no longer names {last.who}"
    elif bindings is not None and bindings.ok:
        why = f"its ClusterRoleBinding {who.binding} (to {who.cluster_role}) is gone"
    else:
        why = f"its ClusterRoleBinding {who.binding} (to {who.cluster_role}) was not read; it is the likely cause"
    e = Evidence(
        "permissions",
        f"{source} on {node} (403s); GET clusterrolebindings",
        {"who": last.who, "refused": last.words(), "count": len(found), "bound": bound},
        log_lines=tuple(f"{r.who} cannot {r.words()}" for r in found[-3:]),
    )
    return Finding(
        "critical",
        who.component,
        f"{who.component} on {node} is forbidden: {last.who} cannot {last.words()} (403)",
        f"the API server's authorizer refuses {who.component}: {why}; {effect}",
        (e,),
        (
            f"kubectl auth can-i {last.verb} {last.resource} --as={last.who}",
            f"restore it: kubectl create clusterrolebinding {who.binding} --clusterrole={who.cluster_role} "
            f"{who.subject}",
        ),
        entity=entity,
        affects=affects,
    )
