"""What changed between two looks at the cluster: the pure diff `chaoskit diagnose --watch` prints.

A component is identified by (component, node); a finding by (component, node, its title's shape): the title up to
its first ": " (the detail after it is what a diagnoser measured or quoted) with every number masked, so "PLEG on n
last active 12s ago" stays one finding when it becomes "... 17s ago". Severity is not part of the identity: the same
finding turning from warning to critical is reported as a change of that finding. A finding that says its evidence
could not be collected ("Evidence could not be collected", or an info resting only on evidence that did not come,
such as "API-side evidence unavailable") is no verdict on the component, so its coming and going is a change of
collection instead, known by the checks it names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from chaoskit.diagnosers.kit.base import (
    SEVERITY_ORDER,
    UNCOLLECTED,
    ComponentReport,
    Diagnosis,
    Finding,
    Severity,
    Status,
)

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")

Place = tuple[str, str]  # (component, node)


@dataclass(frozen=True)
class StatusChanged:
    """A component on a node whose status changed; `before` None: not in the previous look (the first look, or a
    node that came); `after` None: gone from this look (a node that went, or a component no longer diagnosed)."""

    component: str
    node: str
    before: Status | None
    after: Status | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "change": "status",
            "component": self.component,
            "node": self.node,
            "before": self.before,
            "after": self.after,
        }


@dataclass(frozen=True)
class FindingChanged:
    """A finding that appeared, cleared, or is still there at another severity (`was` the one before)."""

    component: str
    node: str
    how: Literal["appeared", "cleared", "severity"]
    finding: Finding  # the current one; for "cleared" the last one seen
    was: Severity | None = None

    def to_dict(self) -> dict[str, Any]:
        f = self.finding
        return {
            "change": "finding",
            "how": self.how,
            "component": self.component,
            "node": self.node,
            "severity": f.severity,
            "was": self.was,
            "title": f.title,
            "probable_cause": f.probable_cause,
            "checks": list(f.checks),
        }


@dataclass(frozen=True)
class CollectionChanged:
    """Evidence (`checks`) that could not be collected in this look (`collected` False, `why`), or came back."""

    component: str
    node: str
    checks: tuple[str, ...]
    collected: bool
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "change": "collection",
            "component": self.component,
            "node": self.node,
            "checks": list(self.checks),
            "collected": self.collected,
            "why": self.why,
        }


Change = StatusChanged | FindingChanged | CollectionChanged


def shape(title: str) -> str:
    """A finding's title without what was measured in it: the part before ": ", every number masked."""
    return _NUMBER.sub("#", title.split(": ", 1)[0])


def uncollected(f: Finding) -> bool:
    """A finding that only says evidence did not come: no verdict, whatever its severity."""
    unanswered = bool(f.evidence) and not any(e.available for e in f.evidence)
    return f.title == UNCOLLECTED or (f.severity == "info" and unanswered)


def changes(previous: Diagnosis | None, current: Diagnosis) -> list[Change]:
    """Everything that differs from `previous` to `current`, in the current look's report order; with no previous
    look, every component's status and every finding (as appeared)."""
    before_status, before_found, before_missing = _index(previous.reports if previous else ())
    status, found, missing = _index(current.reports)
    out: list[Change] = []
    for place in [*status, *(p for p in before_status if p not in status)]:
        was, now = before_status.get(place), status.get(place)
        if was != now:
            out.append(StatusChanged(*place, was, now))
    for key, f in found.items():
        old = before_found.get(key)
        if old is None:
            out.append(FindingChanged(*key[:2], "appeared", f))
        elif old.severity != f.severity:
            out.append(FindingChanged(*key[:2], "severity", f, old.severity))
    out += [FindingChanged(*key[:2], "cleared", f) for key, f in before_found.items() if key not in found]
    out += [CollectionChanged(*key, False, f.probable_cause) for key, f in missing.items() if key not in before_missing]
    out += [CollectionChanged(*key, True) for key in before_missing if key not in missing]
    return out


FindingKey = tuple[str, str, str]  # (component, node, shape of the title)
MissingKey = tuple[str, str, tuple[str, ...]]  # (component, node, the checks not collected)


def _index(
    reports: Iterable[ComponentReport],
) -> tuple[dict[Place, Status], dict[FindingKey, Finding], dict[MissingKey, Finding]]:
    status: dict[Place, Status] = {}
    found: dict[FindingKey, Finding] = {}
    missing: dict[MissingKey, Finding] = {}
    for r in reports:
        status[(r.component, r.subject)] = r.status
        for f in r.findings:
            if uncollected(f):
                missing.setdefault((r.component, r.subject, f.checks), f)
                continue
            key = (r.component, r.subject, shape(f.title))
            kept = found.get(key)
            # two findings of one shape in one look: the worse stands for both
            if kept is None or SEVERITY_ORDER[f.severity] < SEVERITY_ORDER[kept.severity]:
                found[key] = f
    return status, found, missing
