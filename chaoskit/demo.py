"""The main job for now: scale a CPU-loaded Deployment with an HPA on the real cluster and tell what happened.

Timeline entries are seconds since load started, observed by polling the API
every second (1 s resolution; the stage-by-stage measurement comes later).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from chaoskit import workloads
from chaoskit.cluster.kube import Kube, KubeError

Sample = tuple[int, int, int]  # (hpa desired, deployment replicas, ready replicas)


@dataclass
class Event:
    t: float
    what: str


@dataclass
class HpaDemoResult:
    namespace: str
    peak_ready: int
    scaled_up_s: float | None  # load start -> target ready replicas
    scaled_down_s: float | None  # load stop -> back to min replicas
    timeline: list[Event] = field(default_factory=list)
    last: Sample | None = None  # the last sample recorded, so following again does not repeat it

    @property
    def ok(self) -> bool:
        return self.scaled_up_s is not None and self.scaled_down_s is not None


def _sample(kube: Kube, ns: str) -> Sample:
    h = kube.get(f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/web")
    d = kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments/web")
    return (
        int(h.get("status", {}).get("desiredReplicas") or 0),
        int(d.get("status", {}).get("replicas") or 0),
        int(d.get("status", {}).get("readyReplicas") or 0),
    )


def _hpa_has_metrics(kube: Kube, ns: str) -> bool:
    h = kube.get(f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/web")
    return bool(h.get("status", {}).get("currentMetrics"))


def run_hpa_demo(
    kube: Kube,
    ns: str = "chaoskit-demo",
    *,
    target_ready: int = 3,
    timeout: float = 300,
    keep: bool = False,
    say: Callable[[str], None] = lambda _: None,
) -> HpaDemoResult:
    result = HpaDemoResult(ns, 0, None, None)
    kube.delete(f"/api/v1/namespaces/{ns}")
    kube.wait(f"namespace {ns} to be gone", lambda: _gone(kube, f"/api/v1/namespaces/{ns}"), 120)
    try:
        for obj in (workloads.namespace(ns), workloads.web_deployment(ns), workloads.service(ns), workloads.hpa(ns)):
            kube.apply(obj)
        say("waiting for the first web pod and for the HPA to read CPU metrics")
        kube.wait("web ready", lambda: _sample(kube, ns)[2] >= 1, 120)
        kube.wait("HPA metrics", lambda: _hpa_has_metrics(kube, ns), 120)
        say(f"starting load; waiting for {target_ready} ready replicas")
        kube.apply(workloads.load_generator(ns, f"http://web.{ns}.svc.cluster.local/burn?ms=50"))
        t0 = time.monotonic()
        result.scaled_up_s = _follow(kube, ns, t0, result, lambda s: s[2] >= target_ready, timeout, say)
        say("stopping load; waiting for scale-down to 1 replica")
        kube.delete(f"/apis/apps/v1/namespaces/{ns}/deployments/load")
        t1 = time.monotonic()
        down = _follow(kube, ns, t0, result, lambda s: s[0] == 1 and s[1] == 1, timeout, say)
        result.scaled_down_s = None if down is None else down - (t1 - t0)
    finally:
        if not keep:
            kube.delete(f"/api/v1/namespaces/{ns}")
    return result


def _follow(
    kube: Kube,
    ns: str,
    t0: float,
    result: HpaDemoResult,
    done: Callable[[Sample], bool],
    timeout: float,
    say: Callable[[str], None],
) -> float | None:
    """Record every change of (desired, replicas, ready) until done(sample) or timeout; return time of done."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            s = _sample(kube, ns)
        except KubeError as exc:
            result.timeline.append(Event(time.monotonic() - t0, f"API error: {exc}"))
            time.sleep(1)
            continue
        now = time.monotonic() - t0
        if s != result.last:
            ev = Event(now, f"HPA desired={s[0]}  Deployment replicas={s[1]}  ready={s[2]}")
            result.timeline.append(ev)
            say(f"{now:6.1f}s  {ev.what}")
            result.last = s
        result.peak_ready = max(result.peak_ready, s[2])
        if done(s):
            return now
        time.sleep(1)
    return None


def _gone(kube: Kube, path: str) -> bool:
    return kube.find(path) is None
