"""The controllers' permissions: each controller runs as its own service account, bound to its ClusterRole by the
RBAC bootstrap policy (`system:controller:<name>`). A binding that is gone takes that controller's permissions away
while the controller manager stays up and leading; its refusals (403) show only in its own log, because its events
are refused too."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from chaoskit.diagnosers.controller_manager.evidence import ControllerManagerEvidence
from chaoskit.diagnosers.kit.base import Assessed, Evidence, Finding
from chaoskit.diagnosers.kit.common import items

PREFIX = "system:controller:"
SA = "system:serviceaccount:kube-system:"
# what the API server's authorizer says when it refuses a request, as the controller logs it (quotes maybe escaped)
_FORBIDDEN = re.compile(
    r'User \\*"(?P<who>[^"\\]+)\\*" cannot (?P<verb>[a-z]+) resource \\*"(?P<resource>[^"\\]+)\\*"'
    r'(?: in API group \\*"(?P<group>[^"\\]*)\\*")?'
)
_KLOG_TIME = re.compile(r"^[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d(?:\.\d+)?) ")
FRESH_S = 30.0  # a refusal logged this recently is happening now (the controller retries well within it)


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


def _matches(subject: dict[str, Any], who: str) -> bool:
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
            _matches(s, r.who) for s in b.get("subjects") or []
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


def summary(refused: list[Refusal]) -> tuple[str, ...]:
    counts: dict[tuple[str, str], int] = {}
    for r in refused:
        counts[(r.who, r.words())] = counts.get((r.who, r.words()), 0) + 1
    return tuple(f"{who} refused {what}: {n}x in the controller manager's log" for (who, what), n in counts.items())


def permissions(ev: ControllerManagerEvidence) -> Assessed:
    roles = {str(r["metadata"]["name"]) for r in items(ev.clusterroles) if r["metadata"]["name"].startswith(PREFIX)}
    bound = {str(b["metadata"]["name"]) for b in items(ev.clusterrolebindings)}
    read = ev.clusterroles.ok and ev.clusterrolebindings.ok
    missing = sorted(roles - bound) if read else []
    refused = refusals(ev.process.log, ev.collected_at)
    e = Evidence(
        "permissions",
        "GET clusterroles, clusterrolebindings (system:controller:*); the controller manager's log (403s)",
        {
            "controller_roles": len(roles),
            "missing_bindings": ", ".join(missing) or None,
            "refused": len(refused),
            "api": None if read else (ev.clusterroles.error or ev.clusterrolebindings.error),
        },
        log_lines=summary(refused),
    )
    findings = []
    for name in missing:
        sa = name.removeprefix(PREFIX)
        own = [r for r in refused if r.who == f"{SA}{sa}"]
        did = f"; it was refused {own[-1].words()}" if own else ""
        findings.append(
            Finding(
                "critical",
                "controller-manager",
                f"{sa} lost its permissions: ClusterRoleBinding {name} is missing{did}",
                f"the controller runs as service account kube-system/{sa} (--use-service-account-credentials) and "
                "the RBAC bootstrap policy binds it to its ClusterRole; with the binding gone (deleted by hand, a "
                "cleanup or a policy tool) the API server refuses its requests (403) until the binding is back or "
                "the API server next starts, and its events are refused too, so no FailedCreate shows it",
                (e,),
                (
                    f"kubectl auth can-i --list --as={SA}{sa}",
                    f"restore it: kubectl create clusterrolebinding {name} --clusterrole={name} "
                    f"--serviceaccount=kube-system:{sa} (or restart the API server, which re-creates it)",
                ),
                entity=f"clusterrolebinding/{name}",  # the cause: the controller only runs without it
            )
        )
    explained = {f"{SA}{n.removeprefix(PREFIX)}" for n in missing}
    roles_now, bindings_now = items(ev.clusterroles), items(ev.clusterrolebindings)
    fresh = [
        r
        for r in refused
        if r.who not in explained
        and r.at is not None
        and ev.collected_at - r.at <= FRESH_S
        and read
        and not granted(r, roles_now, bindings_now)
    ]
    for who in dict.fromkeys(r.who for r in fresh):
        last = [r for r in fresh if r.who == who][-1]
        findings.append(
            Finding(
                "warning",
                "controller-manager",
                f"{who} is forbidden to {last.words()} (403 in the last {FRESH_S:g}s)",
                "the API server's authorizer refuses a controller's request, and no ClusterRoleBinding grants it "
                "now: its role lacks the rule, or its binding names another subject",
                (e,),
                (f"kubectl auth can-i {last.verb} {last.resource} --as={who}",),
            )
        )
    return Assessed(e, tuple(findings))
