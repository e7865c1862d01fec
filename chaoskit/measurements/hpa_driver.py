"""The active side of HPA-to-Ready, for `chaoskit measure hpa` and the benchmark: a workload with an HPA in a
namespace of its own, scale-ups caused one at a time and each waited for to the end of its path, then scaled back
down so the next run starts from one pod.

Two triggers: `load` (the real path: CPU burns, metrics-server reports it, the HPA decides; the hpa_decision stage
includes metrics-server's 15 s resolution and the HPA's 15 s sync) and `min-replicas` (the HPA is told to scale at
once: every stage after the decision, minus the metrics pipeline's noise).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

from chaoskit import workloads
from chaoskit.env import Env
from chaoskit.errors import ToolError
from chaoskit.measurements.base import TargetParams
from chaoskit.measurements.hpa_scale_up import HpaScaleUp
from chaoskit.model.timeline import MeasurementResult
from chaoskit.seams.kube import KubeError

Trigger = Literal["load", "min-replicas"]
READY_TIMEOUT = 180.0
RUN_TIMEOUT = 240.0  # a load-triggered scale-up: up to 30 s of metrics and HPA sync, then the pods
SCALE_DOWN_TIMEOUT = 180.0
QUIET = 20.0  # no new scale-up for this long after the last one finished: the run is over


def _hpa_path(ns: str) -> str:
    return f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/web"


def _desired(env: Env, ns: str) -> int:
    return int(env.kube.get(_hpa_path(ns)).get("status", {}).get("desiredReplicas") or 0)


def _at_one(env: Env, ns: str) -> bool:
    return _desired(env, ns) == 1 and workloads.ready_replicas(env.kube, ns) == 1


def deploy(env: Env, ns: str, max_replicas: int) -> None:
    for obj in (
        workloads.namespace(ns),
        workloads.web_deployment(ns),
        workloads.service(ns),
        workloads.hpa(ns, max_replicas=max_replicas),
    ):
        env.kube.apply(obj)
    env.kube.wait("the web workload and its HPA to settle at one pod", lambda: _at_one(env, ns), READY_TIMEOUT)


def _finished(m: HpaScaleUp, runs_before: int) -> bool:
    with m.lock:
        t = m.tracker
        if len(t.scale_ups) <= runs_before:
            return False
        last = t.scale_ups[-1]
        pods = sum(1 for p in t.pods.values() if p.run == last.run)
        return pods >= last.to_replicas - last.from_replicas and not t.in_flight(m.nodes)


def one_run(
    env: Env, m: HpaScaleUp, ns: str, trigger: Trigger, max_replicas: int, burn_ms: int, say: Callable[[str], None]
) -> None:
    runs_before = len(m.tracker.scale_ups)
    if trigger == "load":
        env.kube.patch(_hpa_path(ns), {"spec": {"maxReplicas": max_replicas}})  # the last run's scale-back lowered it
        url = f"http://web.{ns}.svc.cluster.local/burn?ms={burn_ms}"
        env.kube.apply(workloads.load_generator(ns, url, concurrency=4))
    else:
        env.kube.patch(_hpa_path(ns), {"spec": {"minReplicas": max_replicas, "maxReplicas": max_replicas}})
    say(f"run {runs_before + 1}: {trigger} applied; waiting for the scale-up to reach every node")
    env.kube.wait("a scale-up to reach its first requests", lambda: _finished(m, runs_before), RUN_TIMEOUT, 0.5)
    quiet_until = time.monotonic() + QUIET
    seen = len(m.tracker.scale_ups)
    while time.monotonic() < quiet_until or not _finished(m, runs_before):  # a load run may scale up twice
        if len(m.tracker.scale_ups) != seen:
            seen, quiet_until = len(m.tracker.scale_ups), time.monotonic() + QUIET
        time.sleep(0.5)
    if trigger == "load":
        env.kube.delete(f"/apis/apps/v1/namespaces/{ns}/deployments/load", propagation="Background")
    scale_back(env, ns)
    say(f"run {runs_before + 1}: done, back to one pod")


def scale_back(env: Env, ns: str) -> None:
    """Drive the HPA back to one pod. Idle pods need not sit below the target: with a small CPU request their probes
    alone can keep the HPA above one (25m requests idle at ~28% against 50%, and ceil(3 × 28/50) = 2), so the
    ceiling comes down to one too; the next run raises it again."""
    env.kube.patch(_hpa_path(ns), {"spec": {"minReplicas": 1, "maxReplicas": 1}})
    try:
        env.kube.wait("the HPA to scale back to one pod", lambda: _at_one(env, ns), SCALE_DOWN_TIMEOUT)
    except KubeError as exc:
        raise KubeError(f"{exc}; the HPA holds {_hpa_state(env, ns)}") from exc


def _hpa_state(env: Env, ns: str) -> str:
    try:
        hpa = env.kube.get(_hpa_path(ns))
    except KubeError as exc:
        return f"an unknown state ({exc})"
    spec, status = hpa.get("spec", {}), hpa.get("status", {})
    cpu = [
        m["resource"]["current"].get("averageUtilization")
        for m in status.get("currentMetrics") or []
        if m.get("type") == "Resource" and "current" in m.get("resource", {})
    ]
    return (
        f"{status.get('currentReplicas')} replicas (desired {status.get('desiredReplicas')}, min "
        f"{spec.get('minReplicas')}, max {spec.get('maxReplicas')}, cpu {cpu[0] if cpu else '?'}%)"
    )


def measure(
    env: Env,
    ns: str,
    runs: int,
    trigger: Trigger,
    max_replicas: int = 4,
    burn_ms: int = 100,
    say: Callable[[str], None] = lambda _: None,
) -> MeasurementResult:
    """Deploy, run `runs` scale-ups, and always delete the namespace."""
    try:
        deploy(env, ns, max_replicas)
        m = HpaScaleUp(env, TargetParams(), "hpa", ns)
        m.start()
        try:
            for _ in range(runs):
                one_run(env, m, ns, trigger, max_replicas, burn_ms, say)
        finally:
            result = m.stop()
        return result
    finally:
        try:
            env.kube.delete(f"/api/v1/namespaces/{ns}", propagation="Background")
        except ToolError as exc:
            say(f"could not delete namespace {ns}: {exc}")
