"""The Kubernetes scalability SLOs as a steady-state check, judged from the components' own SLI metrics over a
window of two scrapes (a slow spell during an earlier fault must not colour a healthy cluster):

- API call latency, per (verb, resource, scope): p99 ≤ 1 s for a single object, ≤ 30 s for a LIST of a namespace or
  the cluster; from the API server's `apiserver_request_sli_duration_seconds` (its latency without admission
  webhooks and without waiting in priority-and-fairness queues, as the SLO defines it);
- pod startup: p99 ≤ 5 s from creation to every container started, without image pulls; from each kubelet's
  `kubelet_pod_start_sli_duration_seconds`, read through the API server's node proxy.

In a short window p99 is nearly the maximum: a pair breaches only when at least `minSlow` of its observations are
over the limit, so one slow second is not a slow cluster.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from chaoskit.checks.base import Check, Outcome, register
from chaoskit.components import apiserver
from chaoskit.env import Env
from chaoskit.figures import seconds
from chaoskit.model.duration import PositiveDuration
from chaoskit.model.kwok import REAL_NODES_SELECTOR
from chaoskit.model.params import params_of
from chaoskit.seams.kube import KubeError
from chaoskit.seams.scrape import Histogram, Labels, Metrics

API_SLI = apiserver.REQUEST_SLI
POD_START_SLI = "kubelet_pod_start_sli_duration_seconds"
SINGLE_OBJECT_VERBS = apiserver.SINGLE_OBJECT_VERBS


class SloParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    window: PositiveDuration = Field(default=15.0, description="Seconds between the two scrapes judged.")
    single_object_p99: float = Field(
        default=1.0, gt=0, alias="singleObjectP99", description="Seconds: a single object's call, p99."
    )
    list_p99: float = Field(default=30.0, gt=0, alias="listP99", description="Seconds: a LIST, p99.")
    pod_startup_p99: float = Field(default=5.0, gt=0, alias="podStartupP99", description="Seconds: pod startup, p99.")
    min_slow: int = Field(
        default=3, ge=1, alias="minSlow", description="Observations over a limit before its p99 counts as breached."
    )
    nodes: str = Field(
        default="",
        description="Label selector of the nodes whose kubelets are read (default: every node that runs one).",
    )


@dataclass(frozen=True)
class Judged:
    """One SLI's window: its p99, how many observations, how many over the limit, and whether that breaches."""

    what: str
    limit: float
    hist: Histogram
    breached: bool

    def words(self) -> str:
        p99 = self.hist.quantile(0.99)
        shown = "—" if p99 is None else f"{seconds(p99)}"
        over = self.hist.over(self.limit)
        counted = f"n={self.hist.count:.0f}{f', {over:.0f} over' if over else ''}"
        return f"{self.what} p99 {shown} ({counted}; ≤{seconds(self.limit)})"


def api_pairs(metrics: Metrics) -> list[tuple[str, str, str]]:
    """Every (verb, resource, scope) the API server timed, streaming calls and paths that are no resource (/readyz,
    /metrics) aside: the SLO is about resources."""
    return sorted(
        {
            (s.labels.get("verb", ""), s.labels.get("resource", ""), s.labels.get("scope", ""))
            for s in metrics.select(f"{API_SLI}_count")
            if s.labels.get("verb") not in ("WATCH", "CONNECT") and s.labels.get("resource")
        }
    )


def judge_api(before: Metrics, after: Metrics, p: SloParams) -> list[Judged]:
    judged = []
    for verb, resource, scope in api_pairs(after):
        if verb == "LIST" and scope in ("namespace", "cluster"):
            limit = p.list_p99
        elif verb in SINGLE_OBJECT_VERBS or scope == "resource":
            limit = p.single_object_p99
        else:
            continue

        def pair(labels: Labels, v: str = verb, r: str = resource, s: str = scope) -> bool:
            return labels.get("verb") == v and labels.get("resource") == r and labels.get("scope") == s

        now = after.histogram(API_SLI, pair)
        if now is None:
            continue
        earlier = before.histogram(API_SLI, pair)
        window = now.minus(earlier) if earlier is not None else now
        if window.count <= 0:
            continue
        judged.append(Judged(f"{verb} {resource} ({scope})", limit, window, window.slow(limit, p.min_slow)))
    return judged


def judge_pod_startup(before: Iterable[Metrics], after: Iterable[Metrics], p: SloParams) -> Judged | None:
    """Every kubelet's pod startups in the window, pooled into one histogram (the SLO is per cluster)."""
    pooled: dict[float, float] = {}
    count = total = 0.0
    for b, a in zip(before, after, strict=True):
        now = a.histogram(POD_START_SLI)
        if now is None:
            continue
        earlier = b.histogram(POD_START_SLI)
        window = now.minus(earlier) if earlier is not None else now
        for le, c in window.buckets:
            pooled[le] = pooled.get(le, 0.0) + c
        count, total = count + window.count, total + window.sum
    if count <= 0:
        return None
    hist = Histogram(tuple(sorted(pooled.items())), count, total)
    return Judged("pod startup", p.pod_startup_p99, hist, hist.slow(p.pod_startup_p99, p.min_slow))


def _scrape(env: Env, path: str) -> Metrics:
    try:
        return Metrics.parse(env.kube.raw(path), path)
    except KubeError as exc:
        return Metrics.unavailable(str(exc).splitlines()[0])


@register
class ScalabilitySlos(Check):
    """The scalability SLOs over a window: API call latency p99 (≤ 1 s single object, ≤ 30 s LIST) from the API
    server's SLI, pod startup p99 (≤ 5 s) from every kubelet's."""

    name = "scalability-slos"
    Params = SloParams

    def run(self, env: Env, params: BaseModel) -> Outcome:
        p = params_of(params, SloParams)
        # a simulated node has no kubelet whose metrics could be read
        selector = ",".join(s for s in (p.nodes, REAL_NODES_SELECTOR) if s)
        nodes = [n["metadata"]["name"] for n in env.kube.get("/api/v1/nodes", labelSelector=selector)["items"]]
        paths = [f"/api/v1/nodes/{n}/proxy/metrics" for n in nodes]
        api_before, kubelets_before = _scrape(env, "/metrics"), [_scrape(env, path) for path in paths]
        time.sleep(p.window)
        api_after, kubelets_after = _scrape(env, "/metrics"), [_scrape(env, path) for path in paths]
        if not api_after or not api_before:
            return Outcome(False, f"the API server's metrics: {api_after.error or api_before.error}")
        judged = judge_api(api_before, api_after, p)
        startup = judge_pod_startup(kubelets_before, kubelets_after, p)
        unread = [n for n, m in zip(nodes, kubelets_after, strict=True) if not m]
        breached = [j for j in [*judged, *([startup] if startup else [])] if j.breached]
        worst = sorted(judged, key=lambda j: -(j.hist.quantile(0.99) or 0.0) / j.limit)[:3]
        said = [
            *(f"breached: {j.words()}" for j in breached),
            f"over {seconds(p.window)}, {len(judged)} kinds of API call, the slowest against their limit: "
            + ("; ".join(j.words() for j in worst) or "none made"),
            startup.words() if startup else "pod startup: no pod started in the window",
            *([f"kubelet metrics not read on {', '.join(unread)}"] if unread else []),
        ]
        return Outcome(not breached, "; ".join(said))
