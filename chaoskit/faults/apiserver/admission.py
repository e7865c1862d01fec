"""apiserver.admission-webhook-failing: the API server's admission chain refusing what it should let through. A
validating webhook with `failurePolicy: Fail` and nothing behind it, scoped to one namespace: every pod created
there is refused ("failed calling webhook"), so a ReplicaSet's scale-out stops at pod creation while every
component is healthy."""

from __future__ import annotations

import json
import shlex
from typing import Any

from pydantic import BaseModel, Field

from chaoskit.cluster.images import WORKLOAD_IMAGE
from chaoskit.env import Env
from chaoskit.errors import ToolError
from chaoskit.faults.base import Fault, FaultPlan, Named, NoOpControl, Radius, kubectl, listed_nowhere, register
from chaoskit.faults.namespaces import delete_namespace_if_ours, ensure_namespace, tolerating_absent
from chaoskit.model.base import DNS_LABEL
from chaoskit.model.params import FaultParams, params_of
from chaoskit.seams.nodeexec import Node

CONFIG = "chaoskit-failing-webhook"  # the ValidatingWebhookConfiguration
CONFIGS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
WEBHOOK = "refuse-pods.chaoskit.dev"  # its one webhook
BACKEND = "chaoskit-no-backend"  # the Service it calls: a selector no pod has, so no endpoint ever
NAME = "apiserver.admission-webhook-failing"  # labels its objects; the plan is made before the class exists
FAULT_LABEL = "chaoskit.dev/fault"
REFUSED = "failed calling webhook"  # what the API server says when a Fail webhook cannot be called


class WebhookParams(FaultParams):
    namespace: str = Field(
        default="chaoskit-webhook",
        max_length=63,
        pattern=DNS_LABEL,
        description="The namespace whose pod creations the webhook refuses: a playbook names its workload's "
        "(chaoskit-<playbook name>); made (and later deleted) if missing.",
    )
    timeout_seconds: int = Field(
        default=5, ge=1, le=30, description="The webhook's timeoutSeconds: how long the API server waits for it."
    )


def webhook_configuration(p: WebhookParams) -> dict[str, Any]:
    labels = {FAULT_LABEL: NAME}
    hook = {
        "name": WEBHOOK,
        "clientConfig": {"service": {"namespace": p.namespace, "name": BACKEND, "path": "/validate", "port": 443}},
        "rules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"], "scope": "*"}
        ],
        "failurePolicy": "Fail",
        "sideEffects": "None",  # so a server-side dry run calls it too: the checks ask with one
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": p.timeout_seconds,
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": p.namespace}},
    }
    meta = {"name": CONFIG, "labels": labels}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": meta,
        "webhooks": [hook],
    }


def backend_service(p: WebhookParams) -> dict[str, Any]:
    meta = {"name": BACKEND, "namespace": p.namespace, "labels": {FAULT_LABEL: NAME}}
    spec = {"selector": {"chaoskit.dev/nothing": "here"}, "ports": [{"port": 443, "targetPort": 8443}]}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec}


def _applied(obj: dict[str, Any]) -> str:
    return f"printf '%s\\n' {shlex.quote(json.dumps(obj, separators=(',', ':')))} | {kubectl('apply', '-f', '-')}"


def probe_pod(namespace: str) -> dict[str, Any]:
    """A pod to create with a server-side dry run: admitted or refused as a ReplicaSet's would be, never stored."""
    container = {"name": "probe", "image": WORKLOAD_IMAGE, "imagePullPolicy": "Never"}
    meta = {"generateName": "chaoskit-admission-probe-", "namespace": namespace}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [container]}}


def refused_by_webhook(env: Env, namespace: str) -> bool | None:
    """Whether the API server refuses a pod in `namespace` because a webhook could not be called (a server-side dry
    run: the whole admission chain, nothing stored); None when the namespace is not there to ask in."""
    try:
        env.kube.request("POST", f"/api/v1/namespaces/{namespace}/pods", probe_pod(namespace), [("dryRun", "All")])
    except ToolError as exc:
        if REFUSED in str(exc):
            return True
        if "not found" in str(exc).lower() or "being terminated" in str(exc):
            return None  # not there (yet, or any more) to ask in
        raise
    return False


@register
class AdmissionWebhookFailing(Fault):
    """A validating webhook that fails closed with nothing behind it refuses every pod created in one namespace.

    Admission webhooks are the API server's extension point, and a broken one is among the commonest ways a healthy
    cluster stops starting pods: the webhook's backend is gone (uninstalled, crash-looping, its certificate expired)
    while its configuration stays, and `failurePolicy: Fail` makes the API server refuse what it cannot have judged.
    This fault creates ValidatingWebhookConfiguration `chaoskit-failing-webhook` (webhook
    `refuse-pods.chaoskit.dev`, CREATE pods, `failurePolicy: Fail`, scoped to `namespace` by its namespaceSelector)
    calling Service `chaoskit-no-backend`, which selects no pod. Every pod creation there, a ReplicaSet's included,
    is refused: `failed calling webhook "refuse-pods.chaoskit.dev": ... no endpoints available for service`, and a
    scale-out stops at pod creation (FailedCreate). No component is broken. Effect: a server-side dry-run pod
    creation in the namespace is refused for that reason (the whole admission chain runs on a dry run; nothing is
    stored). The revert deletes the configuration (and fails while it is still there), the Service, and the
    namespace if the fault made it; the ReplicaSet controller then creates the missing pods on its next retry.
    Recovery: the same dry run is admitted; where the namespace was the fault's, it is gone and no configuration of
    the fault's is left. Runs kubectl on the control-plane node.
    """

    name = NAME
    component = "apiserver"
    named = Named("apiserver", r"webhook refuse-pods\.chaoskit\.dev")
    no_op = NoOpControl(wait=15.0)  # the API server reads webhook configurations within a second
    scope = "namespace"
    Params = WebhookParams
    effect_timeout = 60.0
    recovery_timeout = 120.0  # namespace deletion

    def radius(self, node: Node, params: BaseModel) -> Radius:
        return Radius("namespace", params_of(params, WebhookParams).namespace, self.component)  # only there

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        p = params_of(params, WebhookParams)
        labelled = ("-l", f"{FAULT_LABEL}={self.name}")
        config = kubectl("get", "validatingwebhookconfiguration", CONFIG, "--ignore-not-found", "-o", "name")
        return FaultPlan(
            self.name,
            node,
            setup=(ensure_namespace(p.namespace, self.name),),  # the checks ask in it before anything is injected
            apply=(_applied(backend_service(p)), _applied(webhook_configuration(p))),
            undo=(
                tolerating_absent(kubectl("delete", "validatingwebhookconfiguration", *labelled, "--wait=true")),
                tolerating_absent(kubectl("delete", "service", "-n", p.namespace, *labelled, "--ignore-not-found")),
                delete_namespace_if_ours(p.namespace, self.name),
            ),
            verify=(listed_nowhere(config, ".", CONFIG),),  # kubectl prints its name while it stands
            summary=f"validating webhook {WEBHOOK} (failurePolicy Fail, nothing behind it) on pods in {p.namespace}",
            params=p,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return refused_by_webhook(env, plan.params_as(WebhookParams).namespace) is True

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        """The dry run admitted in the namespace. Where the revert deleted the namespace the fault made, there is
        nothing left to ask in: then the namespace must be gone (not terminating) and no webhook configuration of
        the fault's left for the API server to call, so a namespace of that name made again admits pods."""
        ns = plan.params_as(WebhookParams).namespace
        refused = refused_by_webhook(env, ns)
        if refused is not None:
            return not refused
        ours = env.kube.get(CONFIGS, labelSelector=f"{FAULT_LABEL}={NAME}")["items"]
        return not ours and env.kube.find(f"/api/v1/namespaces/{ns}") is None
