"""One controller inside kube-controller-manager that does no work while the process is up, leading and healthy.

Two signatures, each tied to the objects that controller leaves behind:
- its work queue holds items and nothing takes them: the depth stays above zero across two scrapes while the
  count of items worked on does not move and no worker is busy (a controller with no worker running);
- it is not running at all: a controller kube-controller-manager starts by default is missing from /healthz?verbose
  (it lists one check per started controller), e.g. left out by `--controllers`.
The objects whose status lags their spec (a ReplicaSet's generation never observed, an HPA with no status, a
Service with no EndpointSlice) say what the stuck controller costs. Pure: the diagnoser hands in what it collected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chaoskit.components.node_lifecycle import UNREACHABLE
from chaoskit.diagnosers.kit.base import Evidence, Finding
from chaoskit.diagnosers.kit.common import age, rounded
from chaoskit.model.kwok import named
from chaoskit.seams.scrape import Metrics

Obj = dict[str, Any]


@dataclass(frozen=True)
class Controller:
    check: str  # its /healthz?verbose check name (the canonical controller name)
    alias: str  # its --controllers name
    queue: str  # its work queue's name label in /metrics ("" if it has none)
    label: str  # in the field's words
    flag: str = ""  # its concurrency flag


# The controllers on an HPA scale-up's path and those around it that kube-controller-manager v1.34 starts by default.
CONTROLLERS = (
    Controller(
        "replicaset-controller", "replicaset", "replicaset", "ReplicaSet controller", "--concurrent-replicaset-syncs"
    ),
    Controller(
        "deployment-controller", "deployment", "deployment", "Deployment controller", "--concurrent-deployment-syncs"
    ),
    Controller(
        "horizontal-pod-autoscaler-controller",
        "horizontalpodautoscaling",
        "horizontalpodautoscaler",
        "HPA controller",
        "--concurrent-horizontal-pod-autoscaler-syncs",
    ),
    Controller(
        "endpointslice-controller",
        "endpointslice",
        "endpoint_slice",
        "EndpointSlice controller",
        "--concurrent-service-endpoint-syncs",
    ),
    Controller("endpoints-controller", "endpoint", "endpoint", "Endpoints controller", "--concurrent-endpoint-syncs"),
    Controller(
        "resourcequota-controller",
        "resourcequota",
        "resourcequota_primary",
        "resource quota controller",
        "--concurrent-resource-quota-syncs",
    ),
    Controller(
        "namespace-controller", "namespace", "namespace", "namespace controller", "--concurrent-namespace-syncs"
    ),
    Controller(
        "garbage-collector-controller",
        "garbagecollector",
        "garbage_collector_attempt_to_delete",
        "garbage collector",
        "--concurrent-gc-syncs",
    ),
    Controller("node-lifecycle-controller", "nodelifecycle", "node_lifecycle_controller", "node lifecycle controller"),
    Controller(
        "daemonset-controller", "daemonset", "daemonset", "DaemonSet controller", "--concurrent-daemonset-syncs"
    ),
    Controller(
        "statefulset-controller",
        "statefulset",
        "statefulset",
        "StatefulSet controller",
        "--concurrent-statefulset-syncs",
    ),
    Controller("job-controller", "job", "job", "Job controller", "--concurrent-job-syncs"),
    Controller("serviceaccount-controller", "serviceaccount", "serviceaccount", "ServiceAccount controller"),
)
BY_QUEUE = {c.queue: c for c in CONTROLLERS}
_CHECK = re.compile(r"^\[[+-]\](\S+-controller)\b", re.M)


@dataclass(frozen=True)
class StuckQueue:
    queue: str
    depth: float  # items waiting at the second scrape
    added: float  # items added during the window
    controller: Controller | None


def stuck_queues(before: Metrics, after: Metrics) -> list[StuckQueue]:
    """Queues holding items at both scrapes that no worker took in between, with no worker busy on one."""
    if not before or not after:
        return []
    depth0, depth1 = before.group("workqueue_depth", "name"), after.group("workqueue_depth", "name")
    done0 = before.group("workqueue_work_duration_seconds_count", "name")
    done1 = after.group("workqueue_work_duration_seconds_count", "name")
    adds0, adds1 = before.group("workqueue_adds_total", "name"), after.group("workqueue_adds_total", "name")
    busy = after.group("workqueue_unfinished_work_seconds", "name")
    found = []
    for queue, depth in sorted(depth1.items()):
        if depth < 1 or depth0.get(queue, 0) < 1 or busy.get(queue, 0) > 0:
            continue
        if done1.get(queue, 0) != done0.get(queue, 0):  # it worked, or the process restarted in between
            continue
        found.append(StuckQueue(queue, depth, max(0.0, adds1.get(queue, 0) - adds0.get(queue, 0)), BY_QUEUE.get(queue)))
    return found


def missing_controllers(healthz_body: str) -> list[Controller]:
    """Default controllers absent from a /healthz?verbose that lists controllers (none listed: not leading yet)."""
    listed = set(_CHECK.findall(healthz_body))
    if not listed:
        return []
    return [c for c in CONTROLLERS if c.check not in listed]


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
            out.append(f"{ns['metadata']['name']}: Terminating for {since:.0f}s")
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
            out.append(f"node {named(n)}: no heartbeat for {silent:.0f}s, still Ready and untainted")
    return out


def stuck_findings(
    queues: list[StuckQueue],
    missing: list[Controller],
    lagging: Mapping[str, list[str]],  # controller check name -> its objects that lag
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
    who = f"{c.label} ({c.check})" if c else f"the controller of work queue {q.queue}"
    behind = lagging.get(c.check, []) if c else []
    flag = flags.get(c.flag) if c and c.flag else None
    why = (
        f"it runs no worker: kube-controller-manager was started with {c.flag}={flag}"
        if flag == "0" and c
        else "its workers are not running or are blocked before taking work"
    )
    return Finding(
        "critical",
        "controller-manager",
        f"{who} does no work: its queue holds {q.depth:g} item(s) and none was taken in {window:g}s"
        + (f" ({q.added:g} more added)" if q.added else "")
        + (f"; {len(behind)} object(s) behind their spec ({behind[0]})" if behind else ""),
        f"kube-controller-manager is up and leading ({lease}) and /healthz is ok, but this one controller "
        f"takes nothing from its work queue: {why}; what it reconciles never converges",
        (ev,),
        (
            f"kubectl -n kube-system get pod -l component=kube-controller-manager -o yaml: look for {c.flag} "
            "(0 means no worker)"
            if c and c.flag
            else "crictl logs of kube-controller-manager for that controller",
            "fix the flag in /etc/kubernetes/manifests/kube-controller-manager.yaml; kubelet restarts it",
        ),
    )


def _not_started(
    c: Controller, lagging: Mapping[str, list[str]], flags: Mapping[str, str], lease: str, ev: Evidence
) -> Finding:
    """A controller absent from the manager's /healthz: left out by --controllers, or failed to start."""
    behind = lagging.get(c.check, [])
    controllers = flags.get("--controllers")
    left_out = controllers is not None and f"-{c.alias}" in controllers.split(",")
    return Finding(
        "critical" if behind else "warning",
        "controller-manager",
        f"{c.label} ({c.check}) was not started: absent from kube-controller-manager's /healthz"
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
    depth = after.group("workqueue_depth", "name")
    return Evidence(
        "controllers",
        source,
        {
            "stuck_queues": ", ".join(q.queue for q in queues) or None,
            "not_running": ", ".join(c.check for c in missing) or None,
            "flags": " ".join(f"{k}={v}" for k, v in sorted(shown.items())) or None,
        },
        conditions=tuple(line for lines in lagging.values() for line in lines)[:10],
        metrics=rounded((f"depth{{{q.queue}}}", depth.get(q.queue)) for q in queues),
    )
