"""controller-manager.controller-stuck: one controller stuck inside a kube-controller-manager that otherwise
looks healthy."""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from chaoskit.cluster.images import WORKLOAD_IMAGE
from chaoskit.components import controller_manager
from chaoskit.components.common import flags_of
from chaoskit.components.controller_manager.controllers import BY_ALIAS, Controller
from chaoskit.components.controller_manager.workqueues import WORKED, queue_works
from chaoskit.components.leases import LeaseState
from chaoskit.components.node_lifecycle import UNREACHABLE
from chaoskit.env import Env
from chaoskit.faults.base import (
    Fault,
    FaultPlan,
    Named,
    NoOpControl,
    every,
    kubectl,
    listed_nowhere,
    local_healthz,
    register,
)
from chaoskit.faults.control_plane import PARKED, static_pod_back, swap_static_pod
from chaoskit.faults.namespaces import delete_namespace_if_ours, ensure_namespace, tolerating_absent
from chaoskit.model.duration import DurationError, parse_duration
from chaoskit.model.params import FaultParams, params_of
from chaoskit.model.timeline import api_time
from chaoskit.seams.nodeexec import Node
from chaoskit.seams.scrape import Metrics, scrape_command

StuckName = Literal[
    "replicaset", "horizontalpodautoscaling", "endpointslice", "serviceaccount", "namespace", "nodelifecycle"
]
PROBE = "chaoskit-stuck-probe"
NAMESPACE_PREFIX = "chaoskit-stuck-"  # one probe namespace per controller: their no-op controls run side by side


def probe_namespace(controller: str) -> str:
    """Where the probe of `controller` lives (the namespace and node lifecycle controllers' probes need none)."""
    return f"{NAMESPACE_PREFIX}{controller}"


GONE_NAMESPACE = "chaoskit-stuck-probe-gone"  # the namespace controller's probe: made, then deleted at once
LOST_NODE = "chaoskit-stuck-probe-node"  # the node lifecycle controller's probe: a Node no kubelet ever renews
NAME = "controller-manager.controller-stuck"  # labels its objects; the plan is made before the class exists
FAULT_LABEL = "chaoskit.dev/fault"
MANIFEST = controller_manager.MANIFEST
ORIGINAL = f"{PARKED}/kube-controller-manager.yaml"  # where controller-manager.down parks it too: one at a time
EDITED = f"{PARKED}/kube-controller-manager.edited"  # written here, then renamed into place (kubelet sees it whole)


def swap(replacement: str) -> str:
    """Put `replacement` in place of kube-controller-manager's manifest, its new process leading in seconds."""
    return swap_static_pod(controller_manager.PROCESS, MANIFEST, replacement, controller_manager.LEASE_NAME)


LEASE = controller_manager.LEASE
METRICS_URL = controller_manager.METRICS_URL
LEADER_WAIT_S = 120  # a new process leads within seconds (swap_static_pod), or once the old lease lapses


@dataclass(frozen=True)
class StuckController:
    """How kube-controller-manager v1.34 is made to run without one controller's work, and how that shows."""

    controller: Controller
    lag_after: float  # seconds a probe may go unreconciled before it counts: well past a healthy reaction
    workerless: bool = False  # run with no worker (its concurrency flag at 0), not left out by --controllers
    period_flag: str = ""  # a controller that first syncs a new object one period after it appears: that flag
    stock_period: float = 0.0  # and the period when the manifest does not set it

    @property
    def alias(self) -> str:
        """Its --controllers name, which names the variant too."""
        return self.controller.alias

    @property
    def queue(self) -> str:
        return self.controller.queue

    @property
    def flag(self) -> str:
        """The flag chaoskit adds; "" means `--controllers=...,-<alias>`."""
        return f"{self.controller.concurrency}=0" if self.workerless else ""

    def lag(self, env: Env, node: Node) -> float:
        """Seconds past which a working controller would have reconciled the probe, on this cluster."""
        return self.lag_after + (
            manifest_duration(env, node, self.period_flag, self.stock_period) if self.period_flag else 0.0
        )

    def switched_off(self) -> str:
        """An extended regular expression matching the manifest line `edit` changes, as it leaves it."""
        if self.flag:
            return f"^ *- {self.flag}$"
        return f"^ *- --controllers=.*,-{self.alias}(,|$)"

    def edit(self, src: str, dst: str) -> str:
        """A shell line writing `src` with this controller's work switched off to `dst`."""
        after_command = r"s/^( *)- kube-controller-manager$/&\n\1- {}/"
        if self.flag:
            return f"sed -E {shlex.quote(after_command.format(self.flag))} {src} > {dst}"
        extend = shlex.quote(rf"s/^( *- --controllers=.*)$/\1,-{self.alias}/")
        add = shlex.quote(after_command.format(f"--controllers=*,-{self.alias}"))
        has_list = f"grep -q -- '- --controllers=' {src}"
        return f"if {has_list}; then sed -E {extend} {src}; else sed -E {add} {src}; fi > {dst}"


STUCK: dict[StuckName, StuckController] = {
    # 1.34 accepts 0 here: the controller starts, fills its queue from its informers, and runs no worker.
    "replicaset": StuckController(BY_ALIAS["replicaset"], 10.0, workerless=True),
    # 1.34 refuses --concurrent-horizontal-pod-autoscaler-syncs=0 ("must be greater than 0"): it is left out. A
    # working one syncs a new HPA one sync period after it appears (its queue's fixed interval: 15 s stock).
    "horizontalpodautoscaling": StuckController(
        BY_ALIAS["horizontalpodautoscaling"],
        10.0,
        period_flag="--horizontal-pod-autoscaler-sync-period",
        stock_period=15.0,
    ),
    # 1.34 refuses --concurrent-service-endpoint-syncs=0 ("must not be less than 1"): it is left out.
    "endpointslice": StuckController(BY_ALIAS["endpointslice"], 10.0),
    # left out: a new namespace gets no `default` ServiceAccount, and the API server refuses every pod there
    "serviceaccount": StuckController(BY_ALIAS["serviceaccount"], 10.0),
    # left out: a deleted namespace is never emptied and stays Terminating
    "namespace": StuckController(BY_ALIAS["namespace"], 10.0),
    # left out: a node whose heartbeats stop is never marked NotReady nor tainted, and keeps its pods; a working one
    # marks the probe node Unknown one grace period after it first saw it, then at its next look (5 s)
    "nodelifecycle": StuckController(
        BY_ALIAS["nodelifecycle"], 15.0, period_flag="--node-monitor-grace-period", stock_period=50.0
    ),
}


class ControllerStuckParams(FaultParams):
    controller: StuckName = Field(
        default="replicaset",
        description="The controller that stops working: replicaset (no worker: --concurrent-replicaset-syncs=0), "
        "horizontalpodautoscaling, endpointslice, serviceaccount, namespace or nodelifecycle (not started: "
        "--controllers=...,-<name>).",
    )


def manifest_duration(env: Env, node: Node, flag: str, stock: float) -> float:
    """The duration kube-controller-manager's manifest on `node` gives `flag`, or `stock` where it gives none."""
    done = env.nodes.run(node, ["cat", MANIFEST], check=False)
    value = flags_of(done.stdout).get(flag, "") if done.returncode == 0 else ""
    try:
        return parse_duration(value) if value else stock
    except DurationError:
        return stock


def probe_object(controller: StuckName) -> dict[str, Any]:
    """What the stuck controller would reconcile at once if it worked; it costs no node anything either way."""
    meta = {"name": PROBE, "namespace": probe_namespace(controller), "labels": {FAULT_LABEL: NAME}}
    if controller == "serviceaccount":  # the probe is the new namespace itself, which gets no `default` account
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"probe": "serviceaccount"}}
    if controller == "namespace":  # made in setup, deleted by the fault: it must go, and cannot
        gone = {"name": GONE_NAMESPACE, "labels": {FAULT_LABEL: NAME}}
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": gone}
    if controller == "nodelifecycle":  # Ready (ready_once), then never heard from: it must be called lost
        lost = {"name": LOST_NODE, "labels": {FAULT_LABEL: NAME}}
        return {"apiVersion": "v1", "kind": "Node", "metadata": lost, "spec": {}}
    if controller == "replicaset":
        labels = {"app": PROBE}
        pod = {
            "schedulingGates": [{"name": "chaoskit.dev/never"}],  # created but never placed nor run
            "containers": [{"name": "probe", "image": WORKLOAD_IMAGE, "imagePullPolicy": "Never"}],
        }
        spec = {
            "replicas": 0,  # as setup makes it; the fault asks for one pod
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        }
        return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta, "spec": spec}
    if controller == "horizontalpodautoscaling":
        # its target does not exist: a working HPA controller says so in the conditions within one sync
        target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"{PROBE}-absent"}
        cpu = {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
        }
        spec = {"scaleTargetRef": target, "minReplicas": 1, "maxReplicas": 1, "metrics": [cpu]}
        return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta, "spec": spec}
    # a Service selecting nothing still gets an (empty) EndpointSlice from a working controller
    spec = {"selector": {"app": f"{PROBE}-none"}, "ports": [{"port": 80, "targetPort": 8080, "name": "http"}]}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


def ready_once() -> str:
    """A line giving the probe node the status a kubelet posts once, Ready now, and then never again."""
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "chaoskit's probe: Ready once, never heard from again",
        "lastHeartbeatTime": "NOW",
        "lastTransitionTime": "NOW",
    }
    status = shlex.quote(json.dumps({"status": {"conditions": [ready]}}, separators=(",", ":")))
    patch = kubectl("patch", "node", LOST_NODE, "--subresource=status", "--type=merge")
    return f'now=$(date -u +%Y-%m-%dT%H:%M:%SZ) && {patch} -p "$(printf %s {status} | sed "s/NOW/$now/g")"'


def daemon_pods_gone() -> str:
    """A line deleting the pods DaemonSets made for the probe node: a DaemonSet that tolerates every taint (a pod
    network's) gives it one, which never runs and outlives the node unless deleted."""
    aimed = ".spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[*]"
    columns = f"custom-columns=NS:.metadata.namespace,NAME:.metadata.name,NODE:{aimed}.matchFields[*].values[*]"
    listed = kubectl("get", "pods", "-A", "--no-headers", "-o", columns)
    delete = kubectl("delete", "pod", "--ignore-not-found", "--wait=false")
    return f'{listed} | while read -r ns name node; do [ "$node" != {LOST_NODE} ] || {delete} -n "$ns" "$name"; done'


CHANGED_AT = "chaoskit.dev/changed-at"  # epoch seconds of the change the controller is asked to follow
RECONCILE_WAIT_S = 60  # setup: a working controller reconciles the probe within a sync period (15 s stock)
SECOND_TARGET = f"{PROBE}-absent-again"  # the HPA probe's target once the fault renames it: missing too
LOST_TAINTS = (UNREACHABLE, "node.kubernetes.io/not-ready")  # what a lifecycle controller marks a lost node with


def _stamp(kind: str, name: str, namespace: str) -> str:
    """A line writing the time of the change into the probe, where the effect check reads how long it has waited."""
    where = ("-n", namespace) if namespace else ()
    return f'{kubectl("annotate", kind, name, *where, "--overwrite")} "{CHANGED_AT}=$(date +%s)"'


def reconciled_line(controller: StuckName) -> str:
    """A setup line waiting until the working controller has reconciled the probe as made (failing past
    RECONCILE_WAIT_S: a cluster whose controller does not is no place to tell the fault from); "" where there is
    nothing to wait for."""
    ns = ("-n", probe_namespace(controller))
    asked = {
        "replicaset": kubectl("get", "replicaset", PROBE, *ns, "-o", "jsonpath={.status.observedGeneration}"),
        "horizontalpodautoscaling": kubectl("get", "hpa", PROBE, *ns, "-o", "jsonpath={.status.conditions[*].message}"),
        "endpointslice": kubectl(
            "get", "endpointslices", *ns, "-l", f"kubernetes.io/service-name={PROBE}", "-o", "name"
        ),
        "serviceaccount": kubectl("get", "serviceaccount", "default", *ns, "--ignore-not-found", "-o", "name"),
    }.get(controller)
    if asked is None:
        return ""  # a namespace that exists, a node Ready now: the check is asked of them as they are
    return (
        f'i=0; until [ -n "$({asked} 2>/dev/null)" ]; do i=$((i+1)); if [ $i -ge {RECONCILE_WAIT_S} ]; then '
        f'echo "the {controller} controller did not reconcile {probe_namespace(controller)}/{PROBE} within '
        f'{RECONCILE_WAIT_S}s" >&2; exit 1; fi; sleep 1; done'
    )


def change_lines(controller: StuckName) -> tuple[str, ...]:
    """The fault's change to the probe, made once the stuck process leads: what a working controller would follow
    at once (and the stuck one never does), stamped with its time."""
    ns = ("-n", probe_namespace(controller))
    if controller == "replicaset":  # a new generation, one pod asked for
        return (_stamp("replicaset", PROBE, ns[1]), kubectl("scale", "replicaset", PROBE, *ns, "--replicas=1"))
    if controller == "horizontalpodautoscaling":  # its target renamed: its conditions must say the new name
        target = json.dumps({"spec": {"scaleTargetRef": {"name": SECOND_TARGET}}}, separators=(",", ":"))
        patch = kubectl("patch", "hpa", PROBE, *ns, "--type=merge", "-p", target)
        return (_stamp("hpa", PROBE, ns[1]), patch)
    if controller == "endpointslice":  # the Service's slices deleted: a working controller makes them again
        slices = kubectl("delete", "endpointslices", *ns, "-l", f"kubernetes.io/service-name={PROBE}")
        return (_stamp("service", PROBE, ns[1]), slices)
    if controller == "serviceaccount":  # the namespace's `default` account deleted: it must be made again
        return (_stamp("namespace", ns[1], ""), kubectl("delete", "serviceaccount", "default", *ns))
    if controller == "namespace":  # deleted: it must be emptied and go
        return (kubectl("delete", "namespace", GONE_NAMESPACE, "--wait=false"),)
    # the node lifecycle controller: Ready again, untainted, and then never heard from
    untainted = (tolerating_absent(kubectl("taint", "node", LOST_NODE, f"{t}-")) for t in LOST_TAINTS)
    return (*untainted, ready_once())


def _probe_path(controller: StuckName) -> str:
    ns = f"namespaces/{probe_namespace(controller)}"
    return {
        "replicaset": f"/apis/apps/v1/{ns}/replicasets/{PROBE}",
        "horizontalpodautoscaling": f"/apis/autoscaling/v2/{ns}/horizontalpodautoscalers/{PROBE}",
        "endpointslice": f"/api/v1/{ns}/services/{PROBE}",
        "serviceaccount": f"/api/v1/{ns}",
        "namespace": f"/api/v1/namespaces/{GONE_NAMESPACE}",
        "nodelifecycle": f"/api/v1/nodes/{LOST_NODE}",
    }[controller]


def changed(obj: dict[str, Any]) -> float | None:
    """When the probe was last changed for the controller to follow: the fault's stamp, else its making."""
    meta = obj.get("metadata", {})
    stamp = (meta.get("annotations") or {}).get(CHANGED_AT, "")
    return float(stamp) if stamp.isdigit() else api_time(meta.get("creationTimestamp"))


def probe_lags(env: Env, controller: StuckName, now: float, lag: float) -> bool:
    """The probe's last change has gone unfollowed for longer (`lag`) than a working controller would ever take."""
    probe = env.kube.find(_probe_path(controller))
    if probe is None:
        return False
    meta, status = probe.get("metadata", {}), probe.get("status") or {}
    if controller == "namespace":  # deleted, and still there
        deleted = api_time(meta.get("deletionTimestamp"))
        return deleted is not None and now - deleted >= lag
    if controller == "nodelifecycle":  # Ready and untainted, its last heartbeat a grace period and more ago
        ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
        beat = api_time(ready[0].get("lastHeartbeatTime")) if ready else None
        tainted = any(t.get("key") in LOST_TAINTS for t in probe.get("spec", {}).get("taints") or [])
        return (
            bool(ready) and ready[0].get("status") == "True" and not tainted and beat is not None and now - beat >= lag
        )
    since = changed(probe)
    if since is None or now - since < lag:
        return False
    ns = probe_namespace(controller)
    if controller == "replicaset":  # its new generation never observed, no pod made
        pods = env.kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=f"app={PROBE}")["items"]
        return int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 1) and not pods
    if controller == "horizontalpodautoscaling":  # its conditions never name the target it has now
        target = probe.get("spec", {}).get("scaleTargetRef", {}).get("name", "")
        return not any(f'"{target}"' in (c.get("message") or "") for c in status.get("conditions") or [])
    if controller == "serviceaccount":
        return env.kube.find(f"/api/v1/namespaces/{ns}/serviceaccounts/default") is None
    slices = env.kube.get(
        f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
        labelSelector=f"kubernetes.io/service-name={PROBE}",
    )["items"]
    return not [s for s in slices if s.get("metadata", {}).get("labels", {}).get("kubernetes.io/service-name") == PROBE]


def lease_fresh(env: Env, now: float) -> bool:
    """Some kube-controller-manager holds its leader lease and renewed it within the lease's own duration."""
    found = env.kube.find(LEASE)
    lease = None if found is None else LeaseState.of(found, now)
    return lease is not None and bool(lease.holder) and lease.age is not None and lease.age <= lease.duration


@register
class ControllerStuck(Fault):
    """One controller inside kube-controller-manager does no work while the process stays up, leading and healthy.

    The document's controller failure: after an HPA scale-up the pods never converge because one controller (the
    replication controller) is stuck, yet kube-controller-manager keeps renewing its leader lease and its /healthz
    stays ok, unlike controller-manager.hung. How v1.34's binary is made to do that, through its static-pod manifest
    (the original parked in /etc/kubernetes/chaoskit-parked, an edited copy put in its place; kubelet restarts it):
    `replicaset` adds `--concurrent-replicaset-syncs=0`, which 1.34 accepts: the ReplicaSet controller starts, its
    work queue `replicaset` fills, and no worker ever takes an item (/healthz still lists replicaset-controller ok).
    `horizontalpodautoscaling` and `endpointslice`: 1.34 refuses 0 for their concurrency flags
    (`--concurrent-horizontal-pod-autoscaler-syncs` must be greater than 0, `--concurrent-service-endpoint-syncs`
    not less than 1), so the controller is left out with `--controllers=...,-<name>`: it never starts and has no
    work queue; HPAs keep their last status, and Services get no EndpointSlice (scaled-out pods are Ready but never
    in the Service). The document's controller table also lists the ServiceAccount, Namespace and node lifecycle
    controllers, left out the same way: `serviceaccount` (a new namespace gets no `default` ServiceAccount, so the
    API server refuses every pod there), `namespace` (a deleted namespace is never emptied and stays Terminating)
    and `nodelifecycle` (a node whose heartbeats stop is never marked NotReady nor tainted). Its setup makes a probe
    in namespace chaoskit-stuck-<controller> and waits until the working controller has reconciled it (60 s at most): a
    ReplicaSet of no pods whose template is gated (its generation observed), an HPA of a missing Deployment (its
    conditions written), a Service selecting nothing (its EndpointSlice made), the namespace itself (its `default`
    ServiceAccount made); for `namespace` a namespace of its own, for `nodelifecycle` a Node object given a Ready
    status once. So the effect check is first asked of a probe that stands, where a controller already stuck would
    say yes. Once the new process leads, the fault changes the probe and stamps the change's time
    (chaoskit.dev/changed-at): the ReplicaSet asks for one pod, the HPA's target is renamed, the Service's
    EndpointSlices and the namespace's `default` ServiceAccount are deleted, the namespace is deleted, the Node is
    untainted and given one more heartbeat. Effect: the change goes unfollowed (the new generation not observed and
    no pod, no condition naming the new target, no EndpointSlice, no `default` ServiceAccount, 10 s after it; still
    Terminating 10 s after its deletion; the Node still Ready and untainted 15 s past the node-monitor grace period
    its manifest sets after its last heartbeat; for the HPA 10 s past the sync period its manifest sets: 25 s stock,
    15 s on chaoskit's cluster) while kube-controller-manager's /healthz is ok and its lease is fresh. The restart
    and the new process's takeover of the lease take about 5 s (the old pod is let go before the new manifest comes,
    and the dead holder's lease is cut to 1 s: swap_static_pod), 35 s where kubelet is slow to let go; a deadline
    must be at least 90 s (the default, 60 s past the longer of the hold and the 90 s effect timeout,
    is). The revert puts the original manifest back the same way (the API only speeds it up), then deletes the probe and
    its namespace. Runs kubectl on the control-plane node.
    """

    name = NAME
    component = "controller-manager"
    named = Named("controller-manager", r"controller .* (does no work|was not started)")
    no_op = NoOpControl(wait=20.0)  # a probe unreconciled 10 s counts
    Params = ControllerStuckParams
    effect_timeout = 90.0
    recovery_timeout = 120.0

    def __init__(self) -> None:
        self._lags: dict[tuple[Node, StuckName], float] = {}  # per node and controller: its manifest, read once

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        p = params_of(params, ControllerStuckParams)
        stuck, ns = STUCK[p.controller], probe_namespace(p.controller)
        holder = kubectl(
            "get", "lease", "-n", "kube-system", controller_manager.LEASE_NAME, "-o", "jsonpath={.spec.holderIdentity}"
        )
        restart = (
            f"old=$({holder}) && {stuck.edit(ORIGINAL, EDITED)} && ! cmp -s {ORIGINAL} {EDITED} && "
            f"{{ {swap(EDITED)}; }} && i=0 && "
            f'until h=$({holder}) && [ -n "$h" ] && [ "$h" != "$old" ]; do '
            f'i=$((i+1)); if [ $i -ge {LEADER_WAIT_S} ]; then echo "no new leader after {LEADER_WAIT_S}s" >&2; '
            f"exit 1; fi; sleep 1; done"
        )
        probe = json.dumps(probe_object(p.controller), separators=(",", ":"))
        kind = probe_object(p.controller)["kind"].lower()
        gone = ("namespace", GONE_NAMESPACE, "--ignore-not-found", "--wait=false")
        removed = {
            "namespace": kubectl("delete", *gone),
            "nodelifecycle": f"{kubectl('delete', 'node', LOST_NODE, '--ignore-not-found', '--wait=false')} && "
            + daemon_pods_gone(),
        }.get(p.controller, kubectl("delete", kind, "-n", ns, PROBE, "--ignore-not-found"))
        # what the effect check reads is made in setup and reconciled by the working controller before the check is
        # first asked; the fault changes it once the stuck process leads (the old one would follow the change)
        setup = (
            # (a stuck namespace controller would never let a terminating one go: its probe is a namespace)
            *((ensure_namespace(ns, self.name),) if p.controller != "namespace" else ()),
            f"printf '%s\\n' {shlex.quote(probe)} | {kubectl('apply', '-f', '-')}",
            *((ready_once(),) if p.controller == "nodelifecycle" else ()),
            *(line for line in (reconciled_line(p.controller),) if line),
        )
        return FaultPlan(
            self.name,
            node,
            setup=setup,
            apply=(
                f"mkdir -p {PARKED} && test ! -e {ORIGINAL} && cp -p {MANIFEST} {ORIGINAL}",
                restart,
                *change_lines(p.controller),
            ),
            undo=(
                f"rm -f {EDITED}; {swap(ORIGINAL)}",
                tolerating_absent(removed),
                delete_namespace_if_ours(ns, self.name),
            ),
            # the original manifest back, whatever the swap made of a missing one: in place, not parked, not edited
            verify=(
                every(
                    static_pod_back(MANIFEST, ORIGINAL),
                    listed_nowhere(f"cat {MANIFEST}", stuck.switched_off(), f"{stuck.alias} switched off"),
                ),
            ),
            summary=f"restart kube-controller-manager without the {p.controller} controller's work "
            f"({stuck.flag or f'--controllers=...,-{p.controller}'})",
            params=p,
        )

    def no_op_wait(self, params: BaseModel) -> float:
        # past the lag after which the check says yes of a probe left alone, at the stock period (the longest), and
        # a look more: node lifecycle's is a grace period and 15 s
        stuck = STUCK[params_of(params, ControllerStuckParams).controller]
        return max(self.no_op.wait, stuck.lag_after + stuck.stock_period + 5.0)

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        p = plan.params_as(ControllerStuckParams)
        if (lag := self._lags.get((plan.node, p.controller))) is None:
            lag = self._lags[(plan.node, p.controller)] = STUCK[p.controller].lag(env, plan.node)
        now = time.time()
        # stuck alone: a process that is down or frozen would leave the probe unreconciled too
        return (
            probe_lags(env, p.controller, now, lag)
            and local_healthz(env, plan.node, controller_manager.PORT)
            and lease_fresh(env, time.time())
        )

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        p = plan.params_as(ControllerStuckParams)
        if not local_healthz(env, plan.node, controller_manager.PORT):
            return False
        done = env.nodes.run(
            plan.node, ["sh", "-c", scrape_command(METRICS_URL, WORKED, client_cert=True)], check=False
        )
        return done.returncode == 0 and queue_works(Metrics.parse(done.stdout), STUCK[p.controller].queue)
