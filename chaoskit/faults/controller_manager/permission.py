"""controller-manager.permission-revoked: one controller's RBAC binding removed, so the API server's authorizer
refuses what that controller does (403) while the controller manager runs, leads and answers /healthz."""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from chaoskit.cluster.images import WORKLOAD_IMAGE
from chaoskit.components.controller_manager.controllers import BY_NAME, Controller
from chaoskit.env import Env
from chaoskit.faults.base import Fault, FaultPlan, Named, NoOpControl, kubectl, register, within
from chaoskit.model.params import FaultParams, params_of
from chaoskit.seams.nodeexec import Node

AUTHORIZER_WAIT_S = 10  # the authorizer's RBAC cache follows a binding within a second

Revoked = Literal["replicaset", "deployment", "endpointslice", "horizontal-pod-autoscaler"]


@dataclass(frozen=True)
class Duty:
    """What a controller may not do without its binding: the request the authorizer is asked about."""

    verb: str
    resource: str
    group: str = ""
    subresource: str = ""

    def words(self) -> str:
        what = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return f"{self.verb} {what}" + (f" ({self.group})" if self.group else "")


DUTIES: dict[str, Duty] = {
    "replicaset": Duty("create", "pods"),  # a ReplicaSet's scale-out stops at pod creation
    "deployment": Duty("create", "replicasets", "apps"),  # a rollout makes no new ReplicaSet
    "endpointslice": Duty("create", "endpointslices", "discovery.k8s.io"),  # new Services get no endpoints
    "horizontal-pod-autoscaler": Duty("update", "deployments", "apps", "scale"),  # the HPA cannot scale
}


# each variant's controller, named as its service account is without "-controller"
REVOKED: dict[Revoked, Controller] = {
    "replicaset": BY_NAME["replicaset-controller"],
    "deployment": BY_NAME["deployment-controller"],
    "endpointslice": BY_NAME["endpointslice-controller"],
    "horizontal-pod-autoscaler": BY_NAME["horizontal-pod-autoscaler-controller"],
}


def bootstrap_binding(controller: Revoked) -> dict[str, Any]:
    """The binding as the API server's RBAC bootstrap policy makes it (and would again at its next start)."""
    c = REVOKED[controller]
    name = c.role
    meta = {
        "name": name,
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
    }
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": c.account, "namespace": "kube-system"}],
    }


class PermissionParams(FaultParams):
    controller: Revoked = Field(
        default="replicaset",
        description="The controller whose ClusterRoleBinding is removed: replicaset (pods are not created), "
        "deployment (no new ReplicaSets), endpointslice (no EndpointSlices), horizontal-pod-autoscaler (no scaling).",
    )


def allowed(env: Env, controller: Revoked, namespace: str = "default") -> bool:
    """The API server's authorizer asked whether the controller may do its duty (a SubjectAccessReview)."""
    duty = DUTIES[controller]
    attributes = {"namespace": namespace, "verb": duty.verb, "group": duty.group, "resource": duty.resource}
    if duty.subresource:
        attributes["subresource"] = duty.subresource
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {"user": REVOKED[controller].user, "resourceAttributes": attributes},
    }
    answer = env.kube.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    return bool(answer.get("status", {}).get("allowed"))


DUTY_NAMESPACE = "default"
FAULT_LABEL = "chaoskit.dev/fault"
NAME = "controller-manager.permission-revoked"
DUTY_WAIT_S = {"horizontal-pod-autoscaler": 20.0}  # an HPA's first sync comes within its sync period (5-15 s)
DUTY_WAIT_DEFAULT_S = 10.0  # the other controllers act on a new object within a second


def _gated_pods(app: str) -> dict[str, Any]:
    """A pod template counted and created, never placed nor run."""
    pod = {
        "schedulingGates": [{"name": "chaoskit.dev/never"}],
        "containers": [{"name": "probe", "image": WORKLOAD_IMAGE, "imagePullPolicy": "Never"}],
    }
    return {"metadata": {"labels": {"app": app}}, "spec": pod}


def duty_probe(controller: str) -> list[dict[str, Any]]:
    """What `controller` acts on at once when it may do its duty: the objects made, the one it acts on last."""
    meta = {"generateName": "chaoskit-duty-probe-", "namespace": DUTY_NAMESPACE, "labels": {FAULT_LABEL: NAME}}
    app = {"app": "chaoskit-duty-probe"}
    if controller == "endpointslice":  # a Service selecting nothing still gets an (empty) EndpointSlice
        spec = {"selector": {"app": "chaoskit-duty-probe-none"}, "ports": [{"port": 80, "name": "http"}]}
        return [{"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}]
    workload: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet" if controller == "replicaset" else "Deployment",
        "metadata": meta,
        "spec": {"replicas": 1, "selector": {"matchLabels": app}, "template": _gated_pods(app["app"])},
    }
    return [workload]


COLLECTIONS = {
    "Service": f"/api/v1/namespaces/{DUTY_NAMESPACE}/services",
    "ReplicaSet": f"/apis/apps/v1/namespaces/{DUTY_NAMESPACE}/replicasets",
    "Deployment": f"/apis/apps/v1/namespaces/{DUTY_NAMESPACE}/deployments",
    "HorizontalPodAutoscaler": f"/apis/autoscaling/v2/namespaces/{DUTY_NAMESPACE}/horizontalpodautoscalers",
}
PODS = f"/api/v1/namespaces/{DUTY_NAMESPACE}/pods"
SLICES = f"/apis/discovery.k8s.io/v1/namespaces/{DUTY_NAMESPACE}/endpointslices"


def hpa_of(deployment: str) -> dict[str, Any]:
    """An HPA whose minimum is above its Deployment's replicas: a working HPA controller raises it at its first sync,
    metrics or none."""
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment}
    meta = {"name": deployment, "namespace": DUTY_NAMESPACE, "labels": {FAULT_LABEL: NAME}}
    spec = {"scaleTargetRef": target, "minReplicas": 2, "maxReplicas": 2}
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta, "spec": spec}


def _owned_by(env: Env, collection: str, uid: str) -> bool:
    items = env.kube.get(collection, labelSelector="app=chaoskit-duty-probe")["items"]
    return any(ref.get("uid") == uid for o in items for ref in o["metadata"].get("ownerReferences") or [])


def acted(env: Env, controller: str, probe: dict[str, Any]) -> bool:
    """One look: has `controller` done its duty on `probe` (as the API server returned it when made)?"""
    name, uid = probe["metadata"]["name"], probe["metadata"].get("uid", "")
    if controller == "replicaset":
        return _owned_by(env, PODS, uid)
    if controller == "deployment":
        return _owned_by(env, COLLECTIONS["ReplicaSet"], uid)
    if controller == "endpointslice":
        return bool(env.kube.get(SLICES, labelSelector=f"kubernetes.io/service-name={name}")["items"])
    deployment = env.kube.find(f"{COLLECTIONS['Deployment']}/{name}") or {}
    return int(deployment.get("spec", {}).get("replicas") or 0) >= 2  # the HPA's scale update went through


def duty_done(env: Env, controller: str) -> bool:
    """The controller does its duty on a probe made for it in this very call (a ReplicaSet's pod created, a
    Deployment's ReplicaSet, a Service's EndpointSlice, a Deployment raised to its HPA's minReplicas) within its
    wait: a "no" is the controller's, never the probe's absence. What was made goes before the call returns."""
    made: list[str] = []
    try:
        probe = env.kube.create(COLLECTIONS[(obj := duty_probe(controller)[0])["kind"]], obj)
        made.append(f"{COLLECTIONS[obj['kind']]}/{probe['metadata']['name']}")
        if controller == "horizontal-pod-autoscaler":
            env.kube.create(COLLECTIONS["HorizontalPodAutoscaler"], hpa_of(probe["metadata"]["name"]))
            made.insert(0, f"{COLLECTIONS['HorizontalPodAutoscaler']}/{probe['metadata']['name']}")
        deadline = time.monotonic() + DUTY_WAIT_S.get(controller, DUTY_WAIT_DEFAULT_S)
        while not (done := acted(env, controller, probe)) and time.monotonic() < deadline:
            time.sleep(0.5)
        return done
    finally:
        for path in made:
            env.kube.delete(path, propagation="Background")  # its pods, ReplicaSets or slices go with it


@register
class PermissionRevoked(Fault):
    """One controller's ClusterRoleBinding removed: the API server refuses its requests (403) while all looks healthy.

    kube-controller-manager runs each controller as its own service account (kubeadm sets
    --use-service-account-credentials), each bound to its ClusterRole by the API server's RBAC bootstrap policy (role
    and binding named after the account). A binding deleted by hand, by a sweeping cleanup or by a policy tool takes
    that controller's permissions away until the API server next starts: the controller keeps trying and is refused
    (`... is forbidden: User "system:serviceaccount:kube-system:replicaset-controller" cannot create resource "pods"`),
    and since its events are refused too, no FailedCreate event says so: only the controller manager's log and the
    authorizer do. This fault deletes the binding of `<controller>-controller` (of `horizontal-pod-autoscaler` for the
    HPA controller). Effect: the authorizer, asked with a SubjectAccessReview, refuses the controller its duty (the
    replicaset controller: create pods). The revert applies the binding as the bootstrap policy makes it, and fails
    while the authorizer still refuses. Recovery: the authorizer allows, and the controller does its duty again on a
    probe made for it in namespace default (the replicaset controller creates a ReplicaSet's gated pod; the deployment
    controller a Deployment's ReplicaSet; the endpointslice controller a Service's EndpointSlice; the HPA controller
    raises a Deployment to its minReplicas), within 10 s (20 s for the HPA's first sync); the probe goes with the look.
    Runs kubectl on the control-plane node.
    """

    name = NAME
    component = "controller-manager"
    named = Named("controller-manager", r"lost its permission|forbidden")
    no_op = NoOpControl(wait=10.0)  # the authorizer's RBAC cache follows a deletion within a second
    scope = "cluster"  # the controller works for every namespace
    Params = PermissionParams
    effect_timeout = 30.0
    recovery_timeout = 60.0

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        p = params_of(params, PermissionParams)
        duty, who, binding = DUTIES[p.controller], REVOKED[p.controller].user, REVOKED[p.controller].role
        scope = ["--subresource", duty.subresource] if duty.subresource else []
        what = f"{duty.resource}.{duty.group}" if duty.group else duty.resource
        can = kubectl("auth", "can-i", duty.verb, what, *scope, f"--as={who}", "-n", "default")
        restored = json.dumps(bootstrap_binding(p.controller), separators=(",", ":"))
        return FaultPlan(
            self.name,
            node,
            apply=(kubectl("delete", "clusterrolebinding", binding),),
            undo=(f"printf '%s\\n' {shlex.quote(restored)} | {kubectl('apply', '-f', '-')}",),
            # the authorizer's cache follows within a second: the revert holds until it allows again; kubectl failing
            # to ask is no yes
            verify=(within(AUTHORIZER_WAIT_S, f"{can} >/dev/null 2>&1", f"{who} is still refused {duty.words()}"),),
            summary=f"delete ClusterRoleBinding {binding}: {who} may not {duty.words()}",
            params=p,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return not allowed(env, plan.params_as(PermissionParams).controller)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        """The authorizer allows, and the controller's own requests succeed: it does its duty on a probe."""
        controller = plan.params_as(PermissionParams).controller
        return allowed(env, controller) and duty_done(env, controller)
