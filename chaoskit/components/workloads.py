"""What the cluster's own objects show when something is wrong, whoever caused it: pods that wait, crash or are not
Ready, Deployments that cannot make their pods, Services with no ready endpoint, HPAs that cannot scale, nodes whose
conditions are not well.

Pure readers over the objects the API server returns: each yields symptoms named by the entity that shows them
(kind/namespace/name) and what they stand on (their nodes, the component that should have acted, the objects they
need), for the diagnosis to give to the findings that explain them. Where an object's own words say why (a
container's last error, an image that cannot be pulled, a selector that matches no pod), the symptom carries that
cause, so an unexplained one still names its entity.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chaoskit.components.scheduler import blockers, classify, pinned, reason_of
from chaoskit.figures import seconds
from chaoskit.model.timeline import api_time

Obj = Mapping[str, Any]

# kube-system pods that are a component chaoskit judges: a finding of that component explains their trouble
COMPONENT_OF_LABEL: dict[tuple[str, str], str] = {
    ("k8s-app", "kube-proxy"): "kube-proxy",
    ("k8s-app", "kube-dns"): "dns",
    ("k8s-app", "metrics-server"): "metrics-server",
    ("component", "kube-apiserver"): "apiserver",
    ("component", "etcd"): "etcd",
    ("component", "kube-scheduler"): "scheduler",
    ("component", "kube-controller-manager"): "controller-manager",
}
# a container waiting for one of these says itself why it does not run: the pod's spec or its image, not a component
SELF_WAITING = (
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
)
SAYS_WHY = {"crash-loop": "crash-loops", "waiting": "cannot start its containers"}  # pod troubles told by the pod
NODE_CONDITIONS_BAD_WHEN_TRUE = ("DiskPressure", "MemoryPressure", "PIDPressure", "NetworkUnavailable")


@dataclass(frozen=True)
class Seen:
    """One symptom as read from the objects (the diagnoser turns it into a Symptom with its evidence)."""

    kind: str
    entity: str
    text: str
    touches: tuple[str, ...]
    cause: str = ""
    co_causes: tuple[str, ...] = ()
    remediation: tuple[str, ...] = ()


def entity(kind: str, obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{kind.lower()}/{ns}/{meta.get('name')}" if ns else f"{kind.lower()}/{meta.get('name')}"


def describe(of: str) -> str:
    """The kubectl line that shows an entity's (kind/namespace/name) conditions and events."""
    kind, _, rest = of.partition("/")
    ns, _, name = rest.rpartition("/")
    return f"kubectl describe {kind} {name}" + (f" -n {ns}" if ns else "") + ": its conditions and events"


def owner_of(pod: Obj) -> str:
    """The workload a pod belongs to: a ReplicaSet's Deployment (by its pod-template-hash), else its direct owner,
    else the pod itself."""
    meta = pod.get("metadata") or {}
    ns = meta.get("namespace")
    for ref in meta.get("ownerReferences") or []:
        kind, name = str(ref.get("kind", "")), str(ref.get("name", ""))
        if kind == "ReplicaSet":
            suffix = "-" + str((meta.get("labels") or {}).get("pod-template-hash", ""))
            return (
                f"deployment/{ns}/{name.removesuffix(suffix)}"
                if name.endswith(suffix) and suffix != "-"
                else (f"replicaset/{ns}/{name}")
            )
        if kind == "Node":  # a static pod: the node's kubelet runs it from a manifest
            return entity("Pod", pod)
        if kind:
            return f"{kind.lower()}/{ns}/{name}"
    return entity("Pod", pod)


def component_of(labels: Mapping[str, str]) -> str:
    for (key, value), component in COMPONENT_OF_LABEL.items():
        if labels.get(key) == value:
            return component
    return ""


def _touches(pod: Obj, *extra: str, on_node: bool = True) -> tuple[str, ...]:
    """What a pod's trouble stands on: its workload, its namespace, its component, and (`on_node`) its node."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    out = [owner_of(pod), f"namespace/{meta.get('namespace')}"]
    if on_node and (node := spec.get("nodeName")):
        out.append(f"node/{node}")
    if component := component_of(meta.get("labels") or {}):
        out.append(f"component/{component}")
    return tuple(dict.fromkeys([*out, *extra]))


def _age(value: object, now: float) -> float:
    t = api_time(value)
    return 0.0 if t is None else max(0.0, now - t)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _condition(obj: Obj, kind: str) -> Obj:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


@dataclass(frozen=True)
class Scheduling:
    """What the scheduler said of the Pending pods: the newest FailedScheduling message per pod (namespace/name),
    the nodes it weighed, and how soon a pod it tried counts (its event is its verdict: sooner than an untried one)."""

    said: Mapping[str, str]
    nodes: Sequence[Obj]
    failed_after: float


NO_SCHEDULING = Scheduling({}, (), 10.0)


def pod_symptoms(
    pods: Iterable[Obj],
    now: float,
    *,
    pending_after: float,
    ready_after: float,
    last_words: Mapping[str, str],
    scheduling: Scheduling = NO_SCHEDULING,
) -> list[Seen]:
    """Pods Pending (unscheduled, or scheduled and not starting), crash-looping, or running and not Ready for longer
    than allowed, grouped by owner and trouble. `last_words` maps a pod entity to its crashing container's last
    error line (read from its previous log). A pod the scheduler tried and could not place is its own spec's or its
    nodes' doing, said in the scheduler's words: the scheduler did its job."""
    groups: dict[tuple[str, str], list[tuple[Obj, str, str, tuple[str, ...]]]] = {}
    unschedulable: dict[str, list[tuple[Obj, str, str]]] = {}
    for pod in pods:
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        if meta.get("deletionTimestamp") or status.get("phase") in ("Succeeded", "Failed"):
            continue
        me = entity("Pod", pod)
        waiting = [
            (c.get("name", ""), (c.get("state") or {}).get("waiting") or {}, c)
            for c in (*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ()))
        ]
        crash = next(((n, w, c) for n, w, c in waiting if w.get("reason") == "CrashLoopBackOff"), None)
        stuck = next(((n, w) for n, w, _ in waiting if w.get("reason") in SELF_WAITING), None)
        age = _age(meta.get("creationTimestamp"), now)
        if crash is not None:
            name, _, c = crash
            term = ((c.get("lastState") or {}).get("terminated")) or {}
            line = last_words.get(me) or _last_line(str(term.get("message") or ""))
            how = f"exit {term.get('exitCode')} {term.get('reason') or ''}".strip() if term else "restarting"
            cause = f"container {name} exits ({how}, {c.get('restartCount', 0)} restarts)" + (
                f": {line[:240]}" if line else ""
            )
            # its container's own exit: not its node's doing (a node in trouble beside it explains nothing of it)
            groups.setdefault((owner_of(pod), "crash-loop"), []).append(
                (pod, f"{me}: {cause}", cause, _touches(pod, on_node=False))
            )
        elif stuck is not None:
            name, w = stuck
            cause = f"container {name} waits: {w.get('reason')}: {str(w.get('message') or '')[:200]}".rstrip(": ")
            groups.setdefault((owner_of(pod), "waiting"), []).append(
                (pod, f"{me}: {cause}", cause, _touches(pod, on_node=False))
            )
        elif status.get("phase") == "Pending" and not spec.get("nodeName"):
            message = scheduling.said.get(f"{meta.get('namespace')}/{meta.get('name')}", "")
            if message and age >= scheduling.failed_after:
                reason, detail = classify(pod, message, scheduling.nodes)
                unschedulable.setdefault(owner_of(pod), []).append((pod, reason, detail))
                continue
            if age < pending_after:
                continue
            scheduled = _condition(pod, "PodScheduled")
            why = str(scheduled.get("message") or "not scheduled")[:240]
            text = f"{me} Pending unscheduled for {seconds(age)}: {why}"
            groups.setdefault((owner_of(pod), "pending"), []).append(
                (pod, text, "", _touches(pod, "component/scheduler"))
            )
        elif status.get("phase") in ("Pending", "Running"):
            ready = _condition(pod, "Ready")
            since = _age(ready.get("lastTransitionTime") or meta.get("creationTimestamp"), now)
            if ready.get("status") == "True" or since < ready_after:
                continue
            what = "not started" if status.get("phase") == "Pending" else "not Ready"
            text = f"{me} {what} for {seconds(since)} on {spec.get('nodeName')}: {ready.get('reason') or ''}".rstrip(
                ": "
            )
            groups.setdefault((owner_of(pod), "not-ready"), []).append((pod, text, "", _touches(pod)))
    out = []
    for (owner, kind), members in groups.items():
        first_text, first_cause = members[0][1], members[0][2]
        more = f" (+{len(members) - 1} more pod(s) of {owner})" if len(members) > 1 else ""
        if kind in SAYS_WHY:  # the workload first, in its container's words
            first_text, more = f"{owner} {SAYS_WHY[kind]} ({len(members)} pod(s)): {first_cause}", ""
        touches = tuple(dict.fromkeys(t for m in members for t in m[3]))
        out.append(Seen(kind, owner, first_text + more, touches, first_cause))
    return out + [_unschedulable(owner, members, scheduling.nodes) for owner, members in unschedulable.items()]


def _unschedulable(owner: str, members: Sequence[tuple[Obj, str, str]], nodes: Sequence[Obj]) -> Seen:
    """Pods of one workload no node fits: caused by the workload's spec, and by the nodes that keep them out."""
    pod, reason, detail = members[0]
    r, ns = reason_of(reason), (pod.get("metadata") or {}).get("namespace")
    names = ", ".join(entity("Pod", m[0]).split("/", 2)[-1] for m in members[:3])
    nodes_at_fault = blockers(pod, reason, nodes)
    why = f"{r.cause}: {detail}"
    if nodes_at_fault and pinned(pod, nodes) and reason != "cordoned":
        why += f"; {owner} pins its pods to them"
    fix = r.fix
    if reason == "cordoned" and nodes_at_fault:  # the very command, with the node
        names_ = " ".join(n.removeprefix("node/") for n in nodes_at_fault)
        fix = (f"kubectl uncordon {names_}, or unpin {owner} (its nodeSelector/affinity)",)
    return Seen(
        "unschedulable",
        owner,
        f"{len(members)} pod(s) of {owner} unschedulable: {r.label} ({names})",
        (owner, *nodes_at_fault, f"namespace/{ns}"),
        why,
        nodes_at_fault,
        (*fix, f"kubectl describe pod -n {ns} {names.split(', ')[0]}: the Events section"),
    )


def deployment_symptoms(
    deployments: Iterable[Obj], now: float, *, unavailable_after: float, pods_said: Collection[str] = ()
) -> list[Seen]:
    """Deployments whose pods cannot be made (ReplicaFailure: quota, webhook, permission), that stopped
    progressing, or that have been unavailable for longer than allowed; not those whose pods already say why
    (`pods_said`: the workloads with a pod symptom in the same look)."""
    out = []
    for d in deployments:
        me, ns = entity("Deployment", d), (d.get("metadata") or {}).get("namespace")
        if me in pods_said:
            continue
        failure, progressing = _condition(d, "ReplicaFailure"), _condition(d, "Progressing")
        available = _condition(d, "Available")
        base = (f"namespace/{ns}", "component/controller-manager")
        if failure.get("status") == "True":
            said = f"{failure.get('reason')}: {str(failure.get('message'))[:240]}"
            if "violates PodSecurity" in str(failure.get("message")):  # the namespace's label refuses them
                cause = f"namespace {ns} enforces a Pod Security level its pods do not meet ({said})"
                text = f"{me} cannot create its pods: {said}"
                out.append(Seen("short", f"namespace/{ns}", text, (me, f"namespace/{ns}"), cause))
                continue
            out.append(Seen("short", me, f"{me} cannot create its pods: {said}", base))
        elif progressing.get("reason") == "ProgressDeadlineExceeded":
            said = str(progressing.get("message"))[:240]
            out.append(Seen("short", me, f"{me} stopped progressing: {said}", (f"namespace/{ns}",)))
        elif available.get("status") == "False" and _age(available.get("lastTransitionTime"), now) >= unavailable_after:
            status = d.get("status") or {}
            have = f"{status.get('availableReplicas') or 0}/{(d.get('spec') or {}).get('replicas', 1)}"
            out.append(Seen("short", me, f"{me} unavailable ({have} available): {available.get('message')}", base))
    return out


def service_symptoms(
    services: Iterable[Obj],
    slices: Iterable[Obj],
    pods: Sequence[Obj],
    now: float,
    *,
    endpoints_after: float,
    deployments: Sequence[Obj] = (),
) -> list[Seen]:
    """Services with a selector and no ready endpoint (older than `endpoints_after`): what they stand on is the
    workloads whose pods they select; a selector that matches no pod says itself why (a Deployment of its pods scaled
    to zero names that Deployment); a targetPort none of its pods declare sends every connection nowhere."""
    ready: dict[str, int] = {}
    for s in slices:
        meta = s.get("metadata") or {}
        key = f"service/{meta.get('namespace')}/{(meta.get('labels') or {}).get('kubernetes.io/service-name')}"
        n = sum(1 for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready") is not False)
        ready[key] = ready.get(key, 0) + n
    out = []
    for svc in services:
        meta, spec = svc.get("metadata") or {}, svc.get("spec") or {}
        selector = spec.get("selector") or {}
        if not selector or spec.get("type") == "ExternalName":
            continue
        me = entity("Service", svc)
        chosen = [
            p
            for p in pods
            if (p.get("metadata") or {}).get("namespace") == meta.get("namespace")
            and not (p.get("metadata") or {}).get("deletionTimestamp")  # going: it serves no more
            and selector.items() <= ((p.get("metadata") or {}).get("labels") or {}).items()
        ]
        sel = ",".join(f"{k}={v}" for k, v in selector.items())
        if ready.get(me, 0):
            out += _port_symptoms(svc, me, chosen)
            continue
        if _age(meta.get("creationTimestamp"), now) < endpoints_after:  # new: its endpoints may be on their way
            continue
        if not chosen and (scaled := _scaled_to_zero(deployments, meta.get("namespace"), selector)):
            cause = f"{scaled} is scaled to zero: no pod for {me} to send to"
            out.append(Seen("no-endpoints", scaled, f"{me} has no endpoint: {cause}", (me,), cause))
            continue
        if not chosen:
            cause = (
                f"its selector {sel} matches no pod in {meta.get('namespace')} "
                "(a workload scaled to zero, gone, or labelled otherwise)"
            )
            out.append(
                Seen(
                    "no-endpoints", me, f"{me} has no endpoint: {cause}", (f"namespace/{meta.get('namespace')}",), cause
                )
            )
            continue
        touches = tuple(dict.fromkeys(t for p in chosen for t in _touches(p)))
        out.append(
            Seen(
                "no-endpoints",
                me,
                f"{me} has no ready endpoint ({len(chosen)} pod(s) match {sel}, none Ready)",
                touches,
            )
        )
    return out


def _scaled_to_zero(deployments: Sequence[Obj], namespace: object, selector: Mapping[str, str]) -> str:
    """The Deployment asking for no replicas whose pods the selector would choose, if there is one."""
    for d in deployments:
        meta, spec = d.get("metadata") or {}, d.get("spec") or {}
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if meta.get("namespace") == namespace and spec.get("replicas") == 0 and selector.items() <= labels.items():
            return entity("Deployment", d)
    return ""


def _port_symptoms(svc: Obj, me: str, chosen: Sequence[Obj]) -> list[Seen]:
    """A numeric targetPort that no selected pod declares among its container ports (when they declare any): the
    Service's endpoints are Ready, yet every connection goes to a port nothing listens on."""
    declared = {
        int(p["containerPort"])
        for pod in chosen
        for c in (pod.get("spec") or {}).get("containers") or []
        for p in c.get("ports") or []
        if p.get("containerPort")
    }
    named = {
        str(p.get("name"))
        for pod in chosen
        for c in (pod.get("spec") or {}).get("containers") or []
        for p in c.get("ports") or []
        if p.get("name")
    }
    out = []
    for port in (svc.get("spec") or {}).get("ports") or []:
        target = port.get("targetPort", port.get("port"))
        missing = (isinstance(target, int) and declared and target not in declared) or (
            isinstance(target, str) and not target.isdigit() and chosen and target not in named
        )
        if missing:
            cause = f"its port {port.get('port')} targets {target}, which none of its pods declare ({sorted(declared)})"
            out.append(Seen("wrong-port", me, f"{me} sends to a port its pods do not serve: {cause}", (me,), cause))
    return out


def hpa_symptoms(hpas: Iterable[Obj], now: float, *, blind_after: float) -> list[Seen]:
    """HPAs that cannot scale for longer than allowed: a target whose pods set no request for the metric says
    itself why (the Deployment's spec); one that cannot read metrics stands on metrics-server."""
    out = []
    for h in hpas:
        me, ns = entity("HorizontalPodAutoscaler", h), (h.get("metadata") or {}).get("namespace")
        ref = (h.get("spec") or {}).get("scaleTargetRef") or {}
        target = f"{str(ref.get('kind', '')).lower()}/{ns}/{ref.get('name')}"
        for kind in ("ScalingActive", "AbleToScale"):
            c = _condition(h, kind)
            if c.get("status") != "False" or _age(c.get("lastTransitionTime"), now) < blind_after:
                continue
            said = f"{kind}=False {c.get('reason')}: {str(c.get('message'))[:200]}"
            if c.get("reason") == "FailedGetScale":  # its target is not there (a typo, a deleted workload)
                cause = f"its scaleTargetRef {target} cannot be read ({str(c.get('message'))[:160]})"
                out.append(Seen("hpa", me, f"{me} cannot scale: {said}", (me,), cause))
            elif "missing request for" in str(c.get("message")):
                cause = f"the pods of {target} set no resource request for the HPA's utilization target ({said})"
                out.append(Seen("hpa", target, f"{me} cannot scale: {said}", (me, target), cause))
            else:
                out.append(
                    Seen(
                        "hpa",
                        me,
                        f"{me} cannot scale: {said}",
                        (target, "component/metrics-server", "component/controller-manager"),
                    )
                )
            break
    return out


def node_symptoms(nodes: Iterable[Obj]) -> list[Seen]:
    """Nodes not Ready, or with a pressure or network condition set."""
    out = []
    for n in nodes:
        me = entity("Node", n)
        ready = _condition(n, "Ready")
        if ready and ready.get("status") != "True":
            said = f"Ready={ready.get('status')} {ready.get('reason') or ''}: {str(ready.get('message') or '')[:200]}"
            out.append(Seen("node-condition", me, f"{me} is NotReady ({said.strip()})", (me, "component/kubelet")))
        for kind in NODE_CONDITIONS_BAD_WHEN_TRUE:
            c = _condition(n, kind)
            if c.get("status") == "True":
                out.append(Seen("node-condition", me, f"{me} has {kind}: {str(c.get('message') or '')[:200]}", (me,)))
    return out
