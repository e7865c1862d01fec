"""ResourceQuotas that refuse pod creations: a quota at its hard limit, and the FailedCreate events ("exceeded
quota: <name>") the ReplicaSet controller records for each pod the API server's quota admission refused.

Not a component failure: every controller works, the namespace is simply full. A scale-out (an HPA raising its
Deployment) stops at pod creation. Pure: the diagnoser hands in what it collected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from chaoskit.diagnosers.kit.base import Evidence, Finding
from chaoskit.diagnosers.kit.common import age

Obj = dict[str, Any]
_SUFFIX = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_QUANTITY = re.compile(r"^([0-9.]+)([a-zA-Z]*)$")
_EXCEEDED = re.compile(r"exceeded quota: ([\w.-]+)")


def quantity(value: object) -> float | None:
    """A Kubernetes quantity ("2", "500m", "1Gi") as a number; None when it is not one."""
    m = _QUANTITY.match(str(value).strip())
    if not m or m.group(2) not in ("", *_SUFFIX):
        return None
    return float(m.group(1)) * _SUFFIX.get(m.group(2), 1.0)


@dataclass(frozen=True)
class Refused:
    namespace: str
    quota: str
    owner: str  # the object whose creations were refused (kind/name)
    count: int
    message: str


@dataclass(frozen=True)
class ExhaustedQuota:
    namespace: str
    name: str
    full: tuple[tuple[str, str, str], ...]  # (resource, used, hard) at or above the limit
    refused: tuple[Refused, ...]

    @property
    def figures(self) -> str:
        return ", ".join(f"{r} used {u}/hard {h}" for r, u, h in self.full) or "below its limits now"

    @property
    def refusals(self) -> int:
        return sum(r.count for r in self.refused)


def recent_refusals(events: Iterable[Obj], now: float, within: float) -> list[Refused]:
    """FailedCreate events naming a quota, last seen within `within` seconds."""
    out = []
    for e in events:
        message = e.get("message") or ""
        m = _EXCEEDED.search(message)
        if e.get("reason") != "FailedCreate" or not m:
            continue
        seen = e.get("lastTimestamp") or e.get("eventTime") or e.get("metadata", {}).get("creationTimestamp")
        if (age(seen, now) or 0) > within:
            continue
        obj = e.get("involvedObject") or e.get("regarding") or {}
        ns = obj.get("namespace") or e.get("metadata", {}).get("namespace", "")
        out.append(
            Refused(
                ns, m.group(1), f"{obj.get('kind', '')}/{obj.get('name', '')}", int(e.get("count") or 1), message[:300]
            )
        )
    return out


def exhausted(quotas: Iterable[Obj], refused: list[Refused]) -> list[ExhaustedQuota]:
    """Quotas that refused creations recently, with the resources at their limit now."""
    out = []
    for q in quotas:
        meta, status = q.get("metadata", {}), q.get("status") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        mine = tuple(r for r in refused if r.namespace == ns and r.quota == name)
        if not mine:
            continue
        used, hard = status.get("used") or {}, status.get("hard") or {}
        full = tuple(
            (r, str(used.get(r)), str(h))
            for r, h in sorted(hard.items())
            if (u := quantity(used.get(r, "0"))) is not None and (limit := quantity(h)) is not None and u >= limit
        )
        out.append(ExhaustedQuota(ns, name, full, mine))
    return out


def quota_findings(found: list[ExhaustedQuota], evidence: Evidence) -> list[Finding]:
    findings = []
    for q in found:
        owners = sorted({r.owner for r in q.refused})
        findings.append(
            Finding(
                "warning",
                "workloads",
                f"ResourceQuota {q.name} in namespace {q.namespace} refuses pods ({q.figures}): {q.refusals} pod "
                f"creation(s) refused, exceeded quota, for {', '.join(owners[:3])}",
                "not a component failure: the namespace's quota is used up, so the API server's quota admission "
                "refuses "
                "new pods and the ReplicaSet controller records each refusal as FailedCreate; a scale-out (HPA) stops "
                "at pod creation until the quota is raised or pods go",
                (evidence,),
                (
                    f"kubectl -n {q.namespace} describe resourcequota {q.name}: used against hard",
                    f"raise spec.hard of {q.namespace}/{q.name}, or lower the HPA's maxReplicas to fit it",
                ),
                entity=f"resourcequota/{q.namespace}/{q.name}",  # the cause: not the controller, which only reports
                affects=(
                    f"namespace/{q.namespace}",
                    *(_entity(q.namespace, r.owner) for r in q.refused),
                ),
            )
        )
    return findings


def _entity(namespace: str, owner: str) -> str:
    """An event's kind/name (ReplicaSet/web-5d8) as an entity, kind/namespace/name."""
    kind, _, name = owner.partition("/")
    return f"{kind.lower()}/{namespace}/{name}"


def quotas_evidence(source: str, quotas: int, found: list[ExhaustedQuota]) -> Evidence:
    return Evidence(
        "quotas",
        source,
        {"quotas": quotas, "refusing": len(found), "refused_creations": sum(q.refusals for q in found)},
        events=tuple(f"{r.namespace}/{r.owner}: {r.message}" for q in found for r in q.refused)[:10],
        conditions=tuple(f"{q.namespace}/{q.name}: {q.figures}" for q in found),
    )
