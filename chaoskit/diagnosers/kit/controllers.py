"""One controller inside kube-controller-manager that does no work while the process is up, leading and healthy.

Two signatures, judged in chaoskit.components.controller_manager, each tied here to the objects that controller
leaves behind: its work queue holds items and nothing takes them (workqueues.stuck_queues), or it is not running at
all (controllers.missing_controllers). The objects whose status lags their spec (a ReplicaSet's generation never
observed, an HPA with no status, a Service with no EndpointSlice) say what the stuck controller costs. Pure: the
diagnoser hands in what it collected.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from chaoskit import figures
from chaoskit.components.controller_manager.controllers import Controller
from chaoskit.components.controller_manager.workqueues import StuckQueue, depths
from chaoskit.components.node_lifecycle import UNREACHABLE
from chaoskit.diagnosers.kit.base import Evidence, Finding
from chaoskit.diagnosers.kit.common import age, rounded
from chaoskit.model.kwok import named
from chaoskit.seams.scrape import Metrics

Obj = dict[str, Any]


def _newest_write(obj: Obj) -> Any:
    times = sorted(t for f in obj.get("metadata", {}).get("managedFields") or [] if isinstance(t := f.get("time"), str))
    return times[-1] if times else obj.get("metadata", {}).get("creationTimestamp")


def _key(obj: Obj) -> str:
    meta = obj.get("metadata", {})
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def lagging_replicasets(replicasets: Iterable[Obj], now: float, after: float) -> list[str]:
    """ReplicaSets whose latest spec the ReplicaSet controller has not observed, `after` seconds on."""
    out = []
    for rs in replicasets:
        generation = int(rs.get("metadata", {}).get("generation") or 0)
        observed = int((rs.get("status") or {}).get("observedGeneration") or 0)
        if observed < generation and (age(_newest_write(rs), now) or 0) > after:
            wanted = rs.get("spec", {}).get("replicas", 1)
            have = (rs.get("status") or {}).get("replicas") or 0
            out.append(
                f"{_key(rs)}: generation {generation} not observed (observed {observed or 'none'}), "
                f"{have}/{wanted} pods"
            )
    return out


def lagging_hpas(hpas: Iterable[Obj], now: float, after: float) -> list[str]:
    """HPAs the HPA controller has never synced (no status at all), or whose spec change it has not observed."""
    out = []
    for h in hpas:
        status = h.get("status") or {}
        generation = int(h.get("metadata", {}).get("generation") or 0)
        observed = int(status.get("observedGeneration") or 0)
        never = not status.get("conditions") and not observed
        if (never or observed < generation) and (age(_newest_write(h), now) or 0) > after:
            out.append(
                f"{_key(h)}: "
                + (
                    "never synced (no status)"
                    if never
                    else f"generation {generation} not observed (observed {observed})"
                )
            )
    return out


def services_without_slices(services: Iterable[Obj], slices: Iterable[Obj], now: float, after: float) -> list[str]:
    """Services with a selector that have had no EndpointSlice for `after` seconds."""
    have = {
        (
            s.get("metadata", {}).get("namespace"),
            (s.get("metadata", {}).get("labels") or {}).get("kubernetes.io/service-name"),
        )
        for s in slices
    }
    out = []
    for svc in services:
        meta, spec = svc.get("metadata", {}), svc.get("spec", {})
        if not spec.get("selector") or spec.get("type") == "ExternalName":
            continue
        if (meta.get("namespace"), meta.get("name")) not in have and (age(_newest_write(svc), now) or 0) > after:
            out.append(f"{_key(svc)}: no EndpointSlice")
    return out


def namespaces_without_default_account(
    namespaces: Iterable[Obj], accounts: Iterable[Obj], now: float, after: float
) -> list[str]:
    """Active namespaces that have had no `default` ServiceAccount for `after` seconds: their pods are refused."""
    have = {a.get("metadata", {}).get("namespace") for a in accounts if a.get("metadata", {}).get("name") == "default"}
    return [
        f"{ns['metadata']['name']}: no default ServiceAccount (its pods are refused)"
        for ns in namespaces
        if ns.get("status", {}).get("phase") == "Active"
        and ns["metadata"]["name"] not in have
        and (age(ns["metadata"].get("creationTimestamp"), now) or 0) > after
    ]


def namespaces_stuck_terminating(namespaces: Iterable[Obj], now: float, after: float) -> list[str]:
    """Namespaces deleted over `after` seconds ago and still there."""
    out = []
    for ns in namespaces:
        since = age(ns.get("metadata", {}).get("deletionTimestamp"), now)
        if since is not None and since > after:
            out.append(f"{ns['metadata']['name']}: Terminating for {figures.seconds(since)}")
    return out


def nodes_not_marked_lost(nodes: Iterable[Obj], leases: Iterable[Obj], now: float, after: float) -> list[str]:
    """Nodes whose heartbeat lease has not been renewed (or ever made) for `after` seconds, yet still Ready and not
    tainted unreachable: no node lifecycle controller called them lost."""
    renewed = {str(x.get("metadata", {}).get("name")): (x.get("spec") or {}).get("renewTime") for x in leases}
    out = []
    for n in nodes:
        meta = n.get("metadata", {})
        ready: Obj = next((c for c in n.get("status", {}).get("conditions") or [] if c.get("type") == "Ready"), {})
        tainted = any(t.get("key") == UNREACHABLE for t in n.get("spec", {}).get("taints") or [])
        silent = age(renewed.get(str(meta.get("name"))) or meta.get("creationTimestamp"), now)
        if ready.get("status") == "True" and not tainted and silent is not None and silent > after:
            out.append(f"node {named(n)}: no heartbeat for {figures.seconds(silent)}, still Ready and untainted")
    return out


def stuck_findings(
    queues: list[StuckQueue],
    missing: list[Controller],
    lagging: Mapping[str, list[str]],  # controller name -> its objects that lag
    flags: Mapping[str, str],
    window: float,
    lease: str,
    evidence: Evidence,
) -> list[Finding]:
    """One finding per controller that does no work, naming it; the process itself is not blamed."""
    idle = [_idle(q, lagging, flags, window, lease, evidence) for q in queues]
    return idle + [_not_started(c, lagging, flags, lease, evidence) for c in missing]


def _idle(
    q: StuckQueue, lagging: Mapping[str, list[str]], flags: Mapping[str, str], window: float, lease: str, ev: Evidence
) -> Finding:
    """A controller whose work queue holds items nobody takes."""
    c = q.controller
    who = f"{c.label} ({c.name})" if c else f"the controller of work queue {q.queue}"
    behind = lagging.get(c.name, []) if c else []
    flag = flags.get(c.concurrency) if c and c.concurrency else None
    why = (
        f"it runs no worker: kube-controller-manager was started with {c.concurrency}={flag}"
        if flag == "0" and c
        else "its workers are not running or are blocked before taking work"
    )
    return Finding(
        "critical",
        "controller-manager",
        f"{who} does no work: its queue holds {q.depth:g} item(s) and none was taken in {figures.seconds(window)}"
        + (f" ({q.added:g} more added)" if q.added else "")
        + (f"; {len(behind)} object(s) behind their spec ({behind[0]})" if behind else ""),
        f"kube-controller-manager is up and leading ({lease}) and /healthz is ok, but this one controller "
        f"takes nothing from its work queue: {why}; what it reconciles never converges",
        (ev,),
        (
            f"kubectl -n kube-system get pod -l component=kube-controller-manager -o yaml: look for {c.concurrency} "
            "(0 means no worker)"
            if c and c.concurrency
            else "crictl logs of kube-controller-manager for that controller",
            "fix the flag in /etc/kubernetes/manifests/kube-controller-manager.yaml; kubelet restarts it",
        ),
    )


def _not_started(
    c: Controller, lagging: Mapping[str, list[str]], flags: Mapping[str, str], lease: str, ev: Evidence
) -> Finding:
    """A controller absent from the manager's /healthz: left out by --controllers, or failed to start."""
    behind = lagging.get(c.name, [])
    controllers = flags.get("--controllers")
    left_out = controllers is not None and f"-{c.alias}" in controllers.split(",")
    return Finding(
        "critical" if behind else "warning",
        "controller-manager",
        f"{c.label} ({c.name}) was not started: absent from kube-controller-manager's /healthz"
        + (f"; {len(behind)} object(s) behind their spec ({behind[0]})" if behind else ""),
        f"kube-controller-manager is up and leading ({lease}) and /healthz is ok, but it did not start this "
        + (
            f"controller: --controllers={controllers} leaves it out"
            if left_out
            else "controller (left out by --controllers, or it failed to start)"
        )
        + "; what it reconciles never converges",
        (ev,),
        (
            f"put {c.alias} back into --controllers in /etc/kubernetes/manifests/kube-controller-manager.yaml",
            "crictl logs of kube-controller-manager: 'Warning: controller is disabled' or its start error",
        ),
    )


def controllers_evidence(
    source: str,
    queues: list[StuckQueue],
    missing: list[Controller],
    lagging: Mapping[str, list[str]],
    flags: Mapping[str, str],
    after: Metrics,
) -> Evidence:
    shown = {k: v for k, v in flags.items() if k == "--controllers" or k.startswith("--concurrent-")}
    depth = depths(after)
    return Evidence(
        "controllers",
        source,
        {
            "stuck_queues": ", ".join(q.queue for q in queues) or None,
            "not_running": ", ".join(c.name for c in missing) or None,
            "flags": " ".join(f"{k}={v}" for k, v in sorted(shown.items())) or None,
        },
        conditions=tuple(line for lines in lagging.values() for line in lines)[:10],
        metrics=rounded((f"depth{{{q.queue}}}", depth.get(q.queue)) for q in queues),
    )
