"""What the API server's authorizer refused, as a component logs it, and whether RBAC grants it now: every
component identity (the controllers, kube-proxy, the scheduler, kubelet) reads its 403s the same way, so a refusal
names who was refused what, and the binding that should grant it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

SA = "system:serviceaccount:kube-system:"
CLUSTERROLEBINDINGS = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
CLUSTERROLES = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
# what the API server's authorizer says when it refuses a request, as the controller logs it (quotes maybe escaped)
_FORBIDDEN = re.compile(
    r'User \\*"(?P<who>[^"\\]+)\\*" cannot (?P<verb>[a-z]+) resource \\*"(?P<resource>[^"\\]+)\\*"'
    r'(?: in API group \\*"(?P<group>[^"\\]*)\\*")?'
)
_KLOG_TIME = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d(?:\.\d+)?) ")
FRESH_S = 30.0  # a refusal logged this recently is happening now (a component retries well within it)


@dataclass(frozen=True)
class Identity:
    """Who a component is to the API server, and the ClusterRoleBinding its installer (kubeadm) gives it."""

    component: str
    binding: str  # the ClusterRoleBinding's name (also its ClusterRole's, unless `role` says otherwise)
    subject: str  # as `kubectl create clusterrolebinding` takes it: --user=… or --serviceaccount=ns:name
    role: str = ""

    @property
    def cluster_role(self) -> str:
        return self.role or self.binding


@dataclass(frozen=True)
class Refusal:
    who: str
    verb: str
    resource: str
    group: str
    at: float | None  # when it was logged (klog's header), None when the line has no header

    def words(self) -> str:
        return f"{self.verb} {self.resource}" + (f" ({self.group})" if self.group else "")


def logged_at(line: str, now: float) -> float | None:
    """A klog line's time in the year of `now` (klog writes none: a December line read in January is last year's)."""
    m = _KLOG_TIME.match(line)
    if not m:
        return None
    month, day, hour, minute = (int(g) for g in m.groups()[:4])
    year = datetime.fromtimestamp(now, UTC).year
    for y in (year, year - 1):
        at = datetime(y, month, day, hour, minute, tzinfo=UTC).timestamp() + float(m.group(5))
        if at <= now + 60:  # a line from the future is last year's
            return at
    return None


def refusals(log: str, now: float) -> list[Refusal]:
    found = []
    for line in log.splitlines():
        if m := _FORBIDDEN.search(line):
            found.append(Refusal(m["who"], m["verb"], m["resource"], m["group"] or "", logged_at(line, now)))
    return found


def names(subject: dict[str, Any], who: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "ServiceAccount":
        return who == f"system:serviceaccount:{subject.get('namespace')}:{name}"
    if kind == "User":
        return who == name
    groups = {"system:authenticated", "system:serviceaccounts"}
    if who.startswith("system:serviceaccount:"):
        groups.add(f"system:serviceaccounts:{who.split(':')[2]}")
    return kind == "Group" and name in groups


def granted(r: Refusal, roles: list[dict[str, Any]], bindings: list[dict[str, Any]]) -> bool:
    """Whether the cluster-wide RBAC now grants what was refused: a refusal from before a fix is history."""
    by_name = {str(x["metadata"]["name"]): x for x in roles}
    for b in bindings:
        if b.get("roleRef", {}).get("kind") != "ClusterRole" or not any(
            names(s, r.who) for s in b.get("subjects") or []
        ):
            continue
        for rule in by_name.get(str(b["roleRef"]["name"]), {}).get("rules") or []:
            if (
                {r.verb, "*"} & set(rule.get("verbs") or [])
                and {r.resource, "*"} & set(rule.get("resources") or [])
                and {r.group, "*"} & set(rule.get("apiGroups") or [])
            ):
                return True
    return False
