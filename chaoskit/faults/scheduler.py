"""Scheduler faults: down (new pods stay Pending with no FailedScheduling events), and unschedulable pods (Pending
with FailedScheduling events that say why: resources, taints, affinity)."""

from __future__ import annotations

import json
import re
import shlex
import time
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from chaoskit import workloads
from chaoskit.cluster.images import WORKLOAD_IMAGE
from chaoskit.components import scheduler
from chaoskit.env import Env
from chaoskit.faults.base import Fault, FaultPlan, Named, NoOpControl, Radius, kubectl, listed_nowhere, register
from chaoskit.faults.control_plane import StaticPodDown
from chaoskit.model.base import DNS_LABEL, DNS_SUBDOMAIN
from chaoskit.model.params import FaultParams, params_of
from chaoskit.seams.nodeexec import Node, pick


@register
class SchedulerDown(StaticPodDown):
    """kube-scheduler stopped: new pods stay Pending and, unlike a scheduling failure, get no FailedScheduling event."""

    name = "scheduler.down"
    component = "scheduler"
    named = Named("scheduler", r"not running")
    no_op = NoOpControl(wait=10.0)  # the process is gone within seconds
    process = scheduler.PROCESS
    health_port = scheduler.PORT
    lease = scheduler.LEASE

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        """The new process leads and binds a probe pod within PROBE_BIND_S: the scheduler at work again."""
        return super().recovered(env, plan) and bound_probe(env, DOWN_PROBE, self.name)


WORKER = "worker"  # UnschedulableParams.node: the first worker by name


class UnschedulableParams(FaultParams):
    reason: Literal["resources", "taint", "affinity"] = Field(
        default="resources",
        description="Why nothing fits: resources (asks more CPU than any node has), taint (pinned to a node with a "
        "NoSchedule taint it does not tolerate), affinity (required node affinity no node satisfies).",
    )
    node: str = Field(
        default=WORKER,
        max_length=253,
        pattern=DNS_SUBDOMAIN,
        description="reason taint only: the node that is tainted and the pods are pinned to, by name, or `worker` for "
        "the first worker by name.",
    )
    namespace: str = Field(
        default="chaoskit-faults", max_length=63, pattern=DNS_LABEL, description="Where the Deployment goes."
    )
    replicas: int = Field(default=2, ge=1, le=20, description="Pods that stay Pending.")


DEPLOYMENT = "chaoskit-unschedulable"
CREATED_BY = "chaoskit.dev/created-by"  # on a namespace this fault created, so the revert deletes only that
TAINT_KEY = "chaoskit.dev/unschedulable"
TAINT_VALUE = "scheduler.unschedulable"
TAINT = f"{TAINT_KEY}={TAINT_VALUE}:NoSchedule"
PIN_LABEL = f"{TAINT_KEY}={TAINT_VALUE}"  # on the tainted node: what the pods select it by, and the revert finds it by
# The taints Kubernetes and kind put on nodes themselves (kind's control-plane node, node conditions): tolerated, so
# that chaoskit's is the only taint the scheduler can reject a node for (v1.34's taint filter no longer names it).
TOLERATED = (
    "node-role.kubernetes.io/control-plane",
    *(
        f"node.kubernetes.io/{c}"
        for c in ("not-ready", "unreachable", "disk-pressure", "memory-pressure", "pid-pressure", "network-unavailable")
    ),
)
TOO_MUCH_CPU = "10000"  # cores; no kind node has that many


def unschedulable_deployment(p: UnschedulableParams, replicas: int | None = None) -> dict[str, Any]:
    """chaoskit's web Deployment, made impossible to place for `p.reason` (with `p.replicas`, or `replicas`)."""
    dep = workloads.web_deployment(p.namespace, DEPLOYMENT, replicas=p.replicas if replicas is None else replicas)
    dep["metadata"]["labels"] = {**dep["metadata"]["labels"], "chaoskit.dev/fault": "scheduler.unschedulable"}
    pod = dep["spec"]["template"]["spec"]
    if p.reason == "resources":
        pod["containers"][0]["resources"] = {"requests": {"cpu": TOO_MUCH_CPU}, "limits": {"cpu": TOO_MUCH_CPU}}
    elif p.reason == "taint":
        pod["nodeSelector"] = {TAINT_KEY: TAINT_VALUE}  # only the node the fault taints
        pod["tolerations"] = [{"key": key, "operator": "Exists"} for key in TOLERATED]  # every taint but chaoskit's
    else:
        term = {"matchExpressions": [{"key": "chaoskit.dev/no-such-label", "operator": "In", "values": ["true"]}]}
        required = {"nodeSelectorTerms": [term]}
        pod["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    return dep


def taint_line(node: str) -> str:
    """Label and taint `node` (a name: the step's resolution picked it)."""
    n = shlex.quote(node)
    # the taint before the label: the pods, Pending already, select the label and must never meet the node untainted
    return f"{kubectl()} taint nodes {n} {TAINT} --overwrite && {kubectl()} label nodes {n} {PIN_LABEL} --overwrite"


# Every node's name and taint keys, a line each: the revert finds our taint on any node, labelled or not
NODE_TAINTS = kubectl(
    "get", "nodes", "-o", 'jsonpath={range .items[*]}{.metadata.name}{" "}{.spec.taints[*].key}{"\\n"}{end}'
)
UNTAINT = (
    f"ok=0; names=$({NODE_TAINTS}) || ok=1;"
    f""" for n in $(printf '%s\\n' "$names" | awk '/{TAINT_KEY.replace("/", "[/]")}/ {{print $1}}'); do"""
    f' {kubectl()} taint nodes "$n" {TAINT_KEY}:NoSchedule- >/dev/null || ok=1; done; [ $ok -eq 0 ]'
)
# fails while any node still has our taint or label, or when the nodes cannot be read: the switch then retries
LABELLED = kubectl("get", "nodes", "-l", TAINT_KEY, "-o", "name")
NONE_LEFT = listed_nowhere(
    f"{NODE_TAINTS} && {LABELLED}", f"{re.escape(TAINT_KEY)}|^node/", f"the taint or label {TAINT_KEY} on a node"
)
# A pod the scheduler must place once the fault is gone: on the tainted node (reason taint), anywhere otherwise.
PROBE_POD = "chaoskit-schedulable-probe"
DOWN_PROBE = "chaoskit-scheduler-probe"  # scheduler.down's: the new process binds it
PROBE_NAMESPACE = "default"
PROBE_BIND_S = 5.0  # a working scheduler binds a pod that fits within a second or two


def probe_pod(name: str, fault: str, node: str | None = None) -> dict[str, Any]:
    """A pod of chaoskit's workload image that any working scheduler binds at once (to `node` when given)."""
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "probe",
                "image": WORKLOAD_IMAGE,
                "imagePullPolicy": "Never",
                "resources": {"requests": {"cpu": "1m", "memory": "4Mi"}},
            }
        ],
        "tolerations": [{"key": key, "operator": "Exists"} for key in TOLERATED],
        "terminationGracePeriodSeconds": 0,
    }
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    labels = {"app.kubernetes.io/managed-by": "chaoskit", "chaoskit.dev/fault": fault}
    meta = {"name": name, "namespace": PROBE_NAMESPACE, "labels": labels}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def bound_probe(env: Env, name: str, fault: str, node: str | None = None) -> bool:
    """The scheduler binds probe pod `name` (to `node` when given): made and given PROBE_BIND_S to be bound in this
    very call, so a "no" is the scheduler's, never the probe's absence; it goes once asked, bound or not, so nothing
    of it outlives the look."""
    path = f"/api/v1/namespaces/{PROBE_NAMESPACE}/pods/{name}"
    pod = env.kube.find(path)
    if pod is not None and pod["metadata"].get("deletionTimestamp"):
        return False  # the last one is going: the next call makes another
    if pod is None:
        env.kube.apply(probe_pod(name, fault, node))
    deadline = time.monotonic() + PROBE_BIND_S
    while not (bound := bool((env.kube.find(path) or {}).get("spec", {}).get("nodeName"))):
        if time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    env.kube.delete(path)
    return bound


def _tolerating_not_found(line: str) -> str:
    """`line`, except that "not found" (already undone) counts as success. No `exit`: the dead-man switch runs
    every revert line in one script."""
    return f'out=$({line} 2>&1) || case "$out" in *"not found"*) ;; *) echo "$out" >&2; false;; esac'


def _absent(env: Env, path: str) -> bool:
    return env.kube.find(path) is None


def _nodes_with_our_taint_or_label(env: Env) -> list[str]:
    nodes = env.kube.get("/api/v1/nodes")["items"]  # simulated ones too: our taint left on any Node is not reverted
    return [
        n["metadata"]["name"]
        for n in nodes
        if any(t.get("key") == TAINT_KEY for t in n["spec"].get("taints") or [])
        or TAINT_KEY in (n["metadata"].get("labels") or {})
    ]


@register
class Unschedulable(Fault):
    """New pods stay Pending because no node fits them, each with a FailedScheduling event that says why.

    As in an HPA scale-up that outgrows the cluster, or a scheduling policy that is wrong. It creates a small
    Deployment of chaoskit's workload (`chaoskit-unschedulable`, in `namespace`, created and later deleted if
    missing) that cannot be placed for `reason`: `resources` requests 10000 CPUs ("Insufficient cpu"); `taint` labels
    and taints a node (`node`: by default the first worker by name) with the NoSchedule taint
    `chaoskit.dev/unschedulable=scheduler.unschedulable` and pins the pods to that label ("had untolerated
    taint(s)"); `affinity` requires a node label no node has ("didn't match Pod's node affinity/selector"). Effect:
    every replica Pending with such an event, in the scheduler's own words for the reason. v1.34's scheduler no
    longer names the taint it rejected a node for, so the taint variant's pods tolerate every taint Kubernetes and
    kind set themselves (the control-plane role, not-ready, unreachable, disk/memory/PID pressure,
    network-unavailable): chaoskit's is the only one left that the scheduler can reject a node for, and without it the
    event says the pods match no node instead. Unlike scheduler.down, the events are there: that is how the two are
    told apart. The revert deletes the Deployment, the taint and the label (found by the label, whichever node was
    picked) and the namespace if the fault created it, and fails while any node keeps the taint or the label. Its
    setup makes the Deployment with no replicas (the effect check is first asked of one that stands) and the fault
    scales it up; for reason taint the setup makes it with its pods (Pending, pinned to a label no node has yet) and
    the fault taints and labels the node. Recovery: a probe pod (default/chaoskit-schedulable-probe: on the tainted
    node for reason taint, anywhere otherwise) is bound by the scheduler within 5 s, and nothing of the fault's is
    left. Runs kubectl on the control-plane node, which is therefore the fault's target node wherever the taint
    goes.
    """

    name = "scheduler.unschedulable"
    component = "scheduler"
    # the scheduler does its job: what keeps the pods out is the Deployment's spec (or the tainted node), which the
    # workloads' symptoms name
    named = Named("workloads", r"unschedulable")
    # the taint's FailedScheduling event comes within a second
    no_op = NoOpControl(wait=8.0, params=(("reason", "taint"),))
    Params = UnschedulableParams
    effect_timeout = 60.0
    recovery_timeout = 120.0  # namespace deletion

    def radius(self, node: Node, params: BaseModel) -> Radius:
        p = params_of(params, UnschedulableParams)
        if p.reason == "taint":  # a tainted node takes no other playbook's new pods either
            return super().radius(node, params)
        return Radius("namespace", p.namespace, self.component)  # pods nothing can place, in that namespace only

    def pinned(self, params: BaseModel, nodes: Sequence[Node]) -> BaseModel:
        p = params_of(params, UnschedulableParams)
        if p.reason != "taint":
            return p  # no node of its own: its pods fit none
        return p.model_copy(update={"node": pick(nodes, p.node, WORKER).name})

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        p = params_of(params, UnschedulableParams)
        ns = p.namespace
        manifest = json.dumps(unschedulable_deployment(p), separators=(",", ":"))
        created = f"{CREATED_BY}={self.name}"
        make_ns = f"{kubectl('create', 'namespace', ns)} && {kubectl('label', 'namespace', ns, created)}"
        setup = [f"{kubectl('get', 'namespace', ns)} >/dev/null 2>&1 || {{ {make_ns}; }}"]
        undo = [kubectl("delete", "deployment", "-n", ns, DEPLOYMENT, "--ignore-not-found")]
        # kubectl prints the Deployment's name while it stands (nothing where its namespace is gone)
        gone = kubectl("get", "deployment", "-n", ns, DEPLOYMENT, "--ignore-not-found", "-o", "name")
        verify = [listed_nowhere(gone, ".", f"Deployment {ns}/{DEPLOYMENT}")]
        summary = f"create Deployment {ns}/{DEPLOYMENT} ({p.replicas} pods) that cannot be scheduled: {p.reason}"
        deployment = f"printf '%s\\n' {shlex.quote(manifest)} | {kubectl('apply', '-f', '-')}"
        # what the effect check reads is made in setup: the Deployment stands, with no pod, before it is first asked
        idle = json.dumps(unschedulable_deployment(p, replicas=0), separators=(",", ":"))
        setup.append(f"printf '%s\\n' {shlex.quote(idle)} | {kubectl('apply', '-f', '-')}")
        apply = [kubectl("scale", "deployment", "-n", ns, DEPLOYMENT, f"--replicas={p.replicas}")]
        if p.reason == "taint":
            setup[-1] = deployment  # Pending already, pinned to a label no node has: the taint alone is the fault
            apply = [taint_line(p.node)]
            undo += [UNTAINT, kubectl("label", "nodes", "-l", PIN_LABEL, f"{TAINT_KEY}-")]
            verify.append(NONE_LEFT)
            summary += f" (NoSchedule taint {TAINT_KEY} on {p.node})"
        ours = ("-l", created, "--field-selector", f"metadata.name={ns}")
        undo.append(kubectl("delete", "pod", "-n", PROBE_NAMESPACE, PROBE_POD, "--ignore-not-found", "--wait=false"))
        undo.append(kubectl("delete", "namespace", *ours, "--ignore-not-found", "--wait=false"))
        return FaultPlan(
            self.name,
            node,
            apply=tuple(apply),
            undo=tuple(undo),
            verify=tuple(verify),
            summary=summary,
            params=p,
            setup=tuple(setup),
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        p = plan.params_as(UnschedulableParams)
        pods = env.kube.get(f"/api/v1/namespaces/{p.namespace}/pods", labelSelector=f"app={DEPLOYMENT}")["items"]
        pending = {
            o["metadata"]["name"]
            for o in pods
            if o["status"].get("phase") == "Pending" and not o["spec"].get("nodeName")
        }
        if len(pods) != p.replicas or len(pending) != p.replicas:
            return False
        events = env.kube.get(f"/api/v1/namespaces/{p.namespace}/events", fieldSelector="reason=FailedScheduling")
        explained = {
            e["involvedObject"]["name"]
            for e in events["items"]
            if p.reason in scheduler.reasons(str(e.get("message") or ""))
        }
        return pending <= explained

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        """The scheduler binds a new pod again (on the tainted node, for reason taint), and nothing of the fault's is
        left: its Deployment, pods, taint, label, and its namespace if it made one."""
        p = plan.params_as(UnschedulableParams)
        if not bound_probe(env, PROBE_POD, self.name, p.node if p.reason == "taint" else None):
            return False
        if not _absent(env, f"/apis/apps/v1/namespaces/{p.namespace}/deployments/{DEPLOYMENT}"):
            return False
        if env.kube.get(f"/api/v1/namespaces/{p.namespace}/pods", labelSelector=f"app={DEPLOYMENT}")["items"]:
            return False
        if _nodes_with_our_taint_or_label(env):
            return False
        ns = env.kube.find(f"/api/v1/namespaces/{p.namespace}")
        return ns is None or bool(ns["metadata"].get("labels", {}).get(CREATED_BY) != self.name)  # not ours: it stays
