"""API Priority and Fairness: how the API server shares itself among its clients. Each request is matched to a
FlowSchema (by its user, group or service account and what it asks), which puts it in a priority level's queues;
when a level's seats and queues are full, its requests wait, then are rejected (HTTP 429). Read from the API server's
own metrics, between two scrapes, so a rejection long ago does not count now."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chaoskit.seams.scrape import Metrics

FLOWSCHEMAS = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
REJECTED = "apiserver_flowcontrol_rejected_requests_total"  # by flow_schema, priority_level, reason
IN_QUEUE = "apiserver_flowcontrol_current_inqueue_requests"  # by flow_schema, priority_level
METRICS = (REJECTED, IN_QUEUE)


@dataclass(frozen=True)
class Pressure:
    """One FlowSchema's requests in the window: rejected (and why), and waiting in its level's queues now."""

    flow_schema: str
    priority_level: str
    rejected: float
    reasons: tuple[str, ...]
    queued: float


def pressure(before: Metrics, after: Metrics) -> list[Pressure]:
    """Every FlowSchema with requests rejected between the two scrapes or waiting in a queue at the second, the most
    rejected first."""
    rejected: dict[tuple[str, str], float] = {}
    reasons: dict[tuple[str, str], set[str]] = {}
    earlier = {
        (s.labels.get("flow_schema", ""), s.labels.get("priority_level", ""), s.labels.get("reason", "")): s.value
        for s in before.select(REJECTED)
    }
    for s in after.select(REJECTED):
        key = (s.labels.get("flow_schema", ""), s.labels.get("priority_level", ""))
        grew = s.value - earlier.get((*key, s.labels.get("reason", "")), 0.0)
        if grew > 0:
            rejected[key] = rejected.get(key, 0.0) + grew
            reasons.setdefault(key, set()).add(s.labels.get("reason", ""))
    queued = {
        (s.labels.get("flow_schema", ""), s.labels.get("priority_level", "")): s.value
        for s in after.select(IN_QUEUE)
        if s.value > 0
    }
    keys = sorted(set(rejected) | set(queued), key=lambda k: (-rejected.get(k, 0.0), -queued.get(k, 0.0)))
    return [
        Pressure(fs, pl, rejected.get((fs, pl), 0.0), tuple(sorted(reasons.get((fs, pl), ()))), queued.get((fs, pl), 0))
        for fs, pl in keys
    ]


def matches(flowschemas: Iterable[Mapping[str, Any]], name: str) -> tuple[str, ...]:
    """Whom FlowSchema `name` matches, as entities: serviceaccount/ns/name, user/name, group/name."""
    for fs in flowschemas:
        if (fs.get("metadata") or {}).get("name") != name:
            continue
        found: list[str] = []
        for rule in (fs.get("spec") or {}).get("rules") or []:
            for s in rule.get("subjects") or []:
                kind = str(s.get("kind", ""))
                if kind == "ServiceAccount" and (sa := s.get("serviceAccount")):
                    found.append(f"serviceaccount/{sa.get('namespace')}/{sa.get('name')}")
                elif kind in ("User", "Group") and (who := s.get(kind.lower())):
                    found.append(f"{kind.lower()}/{who.get('name')}")
        return tuple(dict.fromkeys(found))
    return ()
