"""apiserver.admission-webhook-slow: the API server's admission chain waiting on a webhook that never answers. A
mutating webhook with `failurePolicy: Ignore`, scoped to one namespace, whose backend accepts the connection and
says nothing: every pod created there is admitted, unjudged, a whole `timeoutSeconds` late, and nothing is refused."""

from __future__ import annotations

import json
import shlex
import time
from typing import Any

from pydantic import BaseModel, Field

from chaoskit.components.admission import admitted_late
from chaoskit.env import Env
from chaoskit.errors import ToolError
from chaoskit.faults.apiserver.admission import probe_pod
from chaoskit.faults.base import (
    Fault,
    FaultPlan,
    Named,
    NoOpControl,
    Radius,
    every,
    kubectl,
    listed_nowhere,
    register,
    sh,
    unit_inactive,
)
from chaoskit.faults.namespaces import delete_namespace_if_ours, ensure_namespace, tolerating_absent
from chaoskit.model.base import DNS_LABEL
from chaoskit.model.params import FaultParams, params_of
from chaoskit.seams.nodeexec import Node

CONFIG = "chaoskit-slow-webhook"  # the MutatingWebhookConfiguration
WEBHOOK = "slow-pods.chaoskit.dev"  # its one webhook
BACKEND = "chaoskit-silent-backend"  # the Service it calls: no selector, one EndpointSlice to the sink
SINK_UNIT = "chaoskit-silent-backend"  # the transient systemd unit on the node running the sink
SINK_PORT = 18443  # where the sink listens on the node
# accepts every connection and reads it to nothing, never a byte back: the TLS handshake never completes
SINK = ("socat", "-u", f"TCP-LISTEN:{SINK_PORT},fork,reuseaddr", "OPEN:/dev/null")
NAME = "apiserver.admission-webhook-slow"  # labels its objects; the plan is made before the class exists
FAULT_LABEL = "chaoskit.dev/fault"
CONFIGS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
NODE_IP = "__NODE_IP__"  # in the EndpointSlice as planned; the apply line puts the node's InternalIP there


class SlowWebhookParams(FaultParams):
    namespace: str = Field(
        default="chaoskit-slow-webhook",  # not the failing webhook's: the two run side by side in the no-op controls
        max_length=63,
        pattern=DNS_LABEL,
        description="The namespace whose pod creations the webhook holds: a playbook names its workload's "
        "(chaoskit-<playbook name>); made (and later deleted) if missing.",
    )
    timeout_seconds: int = Field(
        default=10, ge=2, le=30, description="The webhook's timeoutSeconds: how late each pod there is admitted."
    )


def webhook_configuration(p: SlowWebhookParams) -> dict[str, Any]:
    hook = {
        "name": WEBHOOK,
        "clientConfig": {"service": {"namespace": p.namespace, "name": BACKEND, "path": "/mutate", "port": 443}},
        "rules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"], "scope": "*"}
        ],
        "failurePolicy": "Ignore",
        "sideEffects": "None",  # so a server-side dry run calls it too: the checks ask with one
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": p.timeout_seconds,
        "reinvocationPolicy": "Never",
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": p.namespace}},
    }
    meta = {"name": CONFIG, "labels": {FAULT_LABEL: NAME}}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": meta,
        "webhooks": [hook],
    }


def backend(p: SlowWebhookParams) -> list[dict[str, Any]]:
    """A Service with no selector and its one EndpointSlice, to the sink on the node (its IP filled in on apply)."""
    labels = {FAULT_LABEL: NAME}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": BACKEND, "namespace": p.namespace, "labels": labels},
        "spec": {"ports": [{"port": 443, "targetPort": SINK_PORT, "protocol": "TCP"}]},
    }
    endpoints = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{BACKEND}-sink",
            "namespace": p.namespace,
            "labels": {
                **labels,
                "kubernetes.io/service-name": BACKEND,
                "endpointslice.kubernetes.io/managed-by": "chaoskit.dev",  # not the controller's: it leaves it be
            },
        },
        "addressType": "IPv4",
        "ports": [{"port": SINK_PORT, "protocol": "TCP"}],
        "endpoints": [{"addresses": [NODE_IP], "conditions": {"ready": True}}],
    }
    return [service, endpoints]


def _applied(obj: dict[str, Any], fill: str = "") -> str:
    text = shlex.quote(json.dumps(obj, separators=(",", ":")))
    return f"printf '%s\\n' {text}{fill} | {kubectl('apply', '-f', '-')}"


def dry_run_seconds(env: Env, namespace: str) -> float | None:
    """How long the API server takes to admit a pod in `namespace` (a server-side dry run: the whole admission chain,
    nothing stored); None when the namespace is not there to ask in."""
    started = time.monotonic()
    try:
        env.kube.request("POST", f"/api/v1/namespaces/{namespace}/pods", probe_pod(namespace), [("dryRun", "All")])
    except ToolError as exc:
        if "not found" in str(exc).lower() or "being terminated" in str(exc):
            return None
        raise
    return time.monotonic() - started


@register
class AdmissionWebhookSlow(Fault):
    """A mutating webhook that fails open, behind a backend that never answers, admits every pod in one namespace
    `timeout_seconds` late.

    The quiet sibling of a failing webhook: the backend is up but hung (a deadlocked webhook server, a network path
    that swallows the reply), and `failurePolicy: Ignore` makes the API server wait out the whole timeout, then let
    the request through unjudged. Nothing is refused and every component is healthy; pods simply appear late, and
    a ReplicaSet's scale-out arrives batch by batch, each batch a timeout later. This fault starts a transient
    systemd unit (chaoskit-silent-backend) on the control-plane node running socat: it accepts every TCP connection
    on port 18443 and reads it to nothing, so the API server's TLS handshake never completes. Service
    `chaoskit-silent-backend` (no selector) and its EndpointSlice point at it, and MutatingWebhookConfiguration
    `chaoskit-slow-webhook` (webhook `slow-pods.chaoskit.dev`, CREATE pods, `failurePolicy: Ignore`,
    `timeoutSeconds: timeout_seconds`, scoped to `namespace` by its namespaceSelector) calls that Service. Effect: a
    server-side dry-run pod creation in the namespace takes at least timeout_seconds - 1 (the whole admission chain
    runs on a dry run; nothing is stored). The revert deletes the configuration, the Service and its EndpointSlice,
    stops the unit, deletes the namespace if the fault made it, and last fails while the configuration is still
    there (or kubectl cannot say). Recovery: the configuration is gone and the same dry run is fast again. Runs
    kubectl and systemd-run on the control-plane node.
    """

    name = NAME
    component = "apiserver"
    named = Named("apiserver", r"webhook slow-pods\.chaoskit\.dev")
    no_op = NoOpControl(wait=25.0)  # the real effect shows on the first dry run, one timeout after the apply
    scope = "namespace"
    Params = SlowWebhookParams
    effect_timeout = 60.0  # each look is one dry run, up to timeout_seconds long
    recovery_timeout = 120.0  # namespace deletion

    def radius(self, node: Node, params: BaseModel) -> Radius:
        return Radius("namespace", params_of(params, SlowWebhookParams).namespace, self.component)  # only there

    def lock_name(self, node: Node, params: BaseModel) -> str:
        # one sink port and one configuration name on the cluster: two of these never hold at once
        return "apiserver-admission-webhook-slow"

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        p = params_of(params, SlowWebhookParams)
        labelled = ("-l", f"{FAULT_LABEL}={self.name}")
        address = kubectl(
            "get", "node", node.name, "-o", 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}'
        )
        service, endpoints = backend(p)
        config = kubectl("get", "mutatingwebhookconfiguration", CONFIG, "--ignore-not-found", "-o", "name")
        unit = shlex.quote(SINK_UNIT)
        start = sh("systemd-run", f"--unit={SINK_UNIT}", f"--description=chaoskit {self.name}", *SINK)
        return FaultPlan(
            self.name,
            node,
            setup=(ensure_namespace(p.namespace, self.name),),  # the checks ask in it before anything is injected
            apply=(
                f"systemctl is-active --quiet {unit} || {start}; sleep 0.5; systemctl is-active --quiet {unit}",
                _applied(service),
                f'ip=$({address}) && [ -n "$ip" ] && ' + _applied(endpoints, f' | sed "s/{NODE_IP}/$ip/"'),
                _applied(webhook_configuration(p)),
            ),
            undo=(
                tolerating_absent(kubectl("delete", "mutatingwebhookconfiguration", *labelled, "--wait=true")),
                tolerating_absent(
                    kubectl("delete", "service,endpointslice", "-n", p.namespace, *labelled, "--ignore-not-found")
                ),
                f"systemctl stop {unit} 2>/dev/null; systemctl reset-failed {unit} 2>/dev/null; true",
                delete_namespace_if_ours(p.namespace, self.name),
            ),
            # the configuration gone (kubectl prints its name while it stands) and the sink stopped
            verify=(every(listed_nowhere(config, ".", CONFIG), unit_inactive(unit)),),
            summary=f"mutating webhook {WEBHOOK} (failurePolicy Ignore, timeoutSeconds {p.timeout_seconds}, a backend "
            f"that never answers) on pods in {p.namespace}",
            params=p,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        p = plan.params_as(SlowWebhookParams)
        took = dry_run_seconds(env, p.namespace)
        return took is not None and admitted_late(took, p.timeout_seconds)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        p = plan.params_as(SlowWebhookParams)
        if env.kube.find(f"{CONFIGS}/{CONFIG}") is not None:
            return False  # still there: it holds whatever one dry run says
        took = dry_run_seconds(env, p.namespace)  # None: the namespace the fault made is gone with the revert
        return took is None or not admitted_late(took, p.timeout_seconds)
