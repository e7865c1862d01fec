"""Whether what the controller manager reconciles converges: Deployments that reach their desired state, HPAs that can
read their metrics and scale."""

from __future__ import annotations

from typing import Any

from chaoskit.components.leases import LeaseState
from chaoskit.diagnosers.controller_manager.evidence import (
    DEPLOYMENTS,
    HPAS,
    ControllerManagerEvidence,
    ControllerManagerParams,
)
from chaoskit.diagnosers.kit.base import Assessed, Evidence, Finding
from chaoskit.diagnosers.kit.common import (
    age,
    api_unavailable,
    condition_of,
    items,
)
from chaoskit.figures import seconds

NOT_OBSERVED = "not observed"


def deployments(p: ControllerManagerParams, ev: ControllerManagerEvidence) -> Assessed:
    if not ev.deployments.ok:
        return api_unavailable("controller-manager", "deployments", f"GET {DEPLOYMENTS}", ev.deployments.error)
    behind: list[str] = []
    for d in items(ev.deployments):
        problem = _deployment_problem(d, ev.collected_at, p.converge_after)
        if problem:
            behind.append(f"{_key(d)}: {problem}")
    e = Evidence(
        "deployments",
        f"GET {DEPLOYMENTS}",
        {"deployments": len(items(ev.deployments)), "not_converging": len(behind)},
        conditions=tuple(behind[:10]),
    )
    lease_stale = ev.lease.ok and _lease_stale(ev, p.lease_grace)
    # a generation never observed is the deployment controller not acting; fewer pods than wanted with the
    # controller at work is whatever stops them (scheduling, a node, admission): the workloads' symptoms, owned there
    own = [b for b in behind if NOT_OBSERVED in b]
    if not own and not lease_stale or not behind:
        return Assessed(e)
    return Assessed(
        e,
        (
            Finding(
                "warning",
                "controller-manager",
                f"{len(behind)} Deployment(s) do not converge ({(own or behind)[0]})",
                (
                    "the controller manager is not reconciling (its lease is stale)"
                    if lease_stale
                    else "the deployment controller has not observed their new generation: it is not reconciling "
                    "them (a stuck work queue, a controller not started, or one the API server refuses)"
                ),
                (e,),
                (
                    "kubectl describe deployment and its newest ReplicaSet: the Events and conditions say why",
                    "crictl logs of kube-controller-manager for deployment controller errors",
                ),
            ),
        ),
    )


def hpas(p: ControllerManagerParams, ev: ControllerManagerEvidence) -> Assessed:
    if not ev.hpas.ok:
        return api_unavailable("controller-manager", "hpas", f"GET {HPAS}", ev.hpas.error)
    problems: list[str] = []
    for h in items(ev.hpas):
        problem = _hpa_problem(h, ev.collected_at, p.converge_after)
        if problem:
            problems.append(f"{_key(h)}: {problem}")
    e = Evidence(
        "hpas",
        f"GET {HPAS}",
        {"hpas": len(items(ev.hpas)), "not_converging": len(problems)},
        conditions=tuple(problems[:10]),
    )
    if not problems:
        return Assessed(e)
    return Assessed(
        e,
        (
            Finding(
                "warning",
                "controller-manager",
                f"{len(problems)} HorizontalPodAutoscaler(s) do not converge ({problems[0]})",
                "the HPA controller cannot read metrics (metrics-server), cannot scale its target, or its target "
                "does "
                "not follow the desired replicas",
                (e,),
                (
                    "kubectl describe hpa: the conditions AbleToScale/ScalingActive and the events",
                    "kubectl top pods: do resource metrics exist? (metrics-server in kube-system)",
                ),
            ),
        ),
    )


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _lease_stale(ev: ControllerManagerEvidence, grace: float) -> bool:
    return LeaseState.of(ev.lease.data, ev.collected_at).stale(grace)


def _deployment_problem(d: dict[str, Any], now: float, after: float) -> str:
    meta, spec, status = d.get("metadata", {}), d.get("spec", {}), d.get("status", {})
    if meta.get("deletionTimestamp"):
        return ""  # on its way out (its namespace deleted): its pods go first, nothing is to converge
    generation, observed = int(meta.get("generation") or 0), int(status.get("observedGeneration") or 0)
    since_change = age(_newest_time(d), now)
    if observed < generation and (since_change is None or since_change > after):
        return f"generation {generation} {NOT_OBSERVED} (observed {observed})"
    progressing = condition_of(d, "Progressing")
    if progressing.get("status") == "False" and progressing.get("reason") == "ProgressDeadlineExceeded":
        return f"ProgressDeadlineExceeded: {progressing.get('message', '')}"
    wanted = int(spec.get("replicas", 1))
    have = int(status.get("updatedReplicas") or 0), int(status.get("availableReplicas") or 0)
    # since the last progress or the last loss of availability: a pod that just went is not a stall of minutes
    stalled = min(
        (
            a
            for a in (
                age(progressing.get("lastUpdateTime"), now),
                age(condition_of(d, "Available").get("lastTransitionTime"), now),
            )
            if a is not None
        ),
        default=None,
    )
    if min(have) < wanted and stalled is not None and stalled > after:
        return f"{have[1]}/{wanted} available, {have[0]} updated, no progress for {seconds(stalled)}"
    return ""


def _hpa_problem(h: dict[str, Any], now: float, after: float) -> str:
    for kind in ("AbleToScale", "ScalingActive"):
        c = condition_of(h, kind)
        if c.get("status") == "False" and (age(c.get("lastTransitionTime"), now) or 0) > after:
            return f"{kind}=False {c.get('reason', '')}: {c.get('message', '')}"[:300]
    status = h.get("status", {})
    desired, current = status.get("desiredReplicas"), status.get("currentReplicas")
    since = age(status.get("lastScaleTime"), now)
    if desired is not None and current is not None and desired != current and since is not None and since > after:
        return f"desired {desired} replicas, current {current}, {seconds(since)} after the last scale"
    return ""


def _newest_time(obj: dict[str, Any]) -> str | None:
    times = [f.get("time") for f in obj.get("metadata", {}).get("managedFields") or []]
    strings = sorted(t for t in times if isinstance(t, str))
    return strings[-1] if strings else None
