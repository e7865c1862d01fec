"""controller-manager.quota-exhausted: quota management, the controller manager's part of "quotas cap scale-out":
a ResourceQuota caps a namespace's pods below what its HPA asks for, so the ReplicaSet's pod creations are refused
while every component is healthy."""

from __future__ import annotations

import json
import shlex
from typing import Any

from pydantic import BaseModel, Field

from chaoskit.cluster.images import WORKLOAD_IMAGE
from chaoskit.env import Env
from chaoskit.faults.base import Fault, FaultPlan, Named, NoOpControl, Radius, kubectl, listed_nowhere, register
from chaoskit.faults.namespaces import delete_namespace_if_ours, ensure_namespace, tolerating_absent
from chaoskit.model.base import DNS_LABEL
from chaoskit.model.params import FaultParams, params_of
from chaoskit.model.timeline import api_time
from chaoskit.seams.nodeexec import Node

QUOTA = "chaoskit-quota"
PROBE = "chaoskit-quota-probe"
NAME = "controller-manager.quota-exhausted"  # labels its objects; the plan is made before the class exists
FAULT_LABEL = "chaoskit.dev/fault"
STATUS_WAIT_S = 60  # the resource quota controller fills a new quota's status within a sync
REFUSED = "exceeded quota"  # what the API server's quota admission says, in the ReplicaSet's FailedCreate event


class QuotaParams(FaultParams):
    namespace: str = Field(
        default="chaoskit-quota",
        max_length=63,
        pattern=DNS_LABEL,
        description="The namespace the quota caps: a playbook names its workload's (chaoskit-<playbook name>); "
        "made (and later deleted) if missing.",
    )
    pods: int = Field(default=1, ge=0, le=1000, description="The quota's pods cap (hard pods).")
    probe_replicas: int = Field(
        default=2,
        ge=0,
        le=50,
        description="Pods a probe ReplicaSet asks for (gated: they never run), so refusals show even with no "
        "workload; 0 when the namespace's own workload (an HPA scaling out) does the asking.",
    )


ABOVE_DEMAND = 500  # the quota's cap as setup makes it: no namespace of a playbook asks for so many pods


def canonical(pods: int) -> str:
    """A pod count as the API server writes the quantity back (1000 is "1k"), to compare with the quota's status."""
    return f"{pods // 1000}k" if pods and pods % 1000 == 0 else str(pods)


def quota_object(p: QuotaParams, pods: int | None = None) -> dict[str, Any]:
    meta = {"name": QUOTA, "namespace": p.namespace, "labels": {FAULT_LABEL: NAME}}
    hard = {"pods": str(p.pods if pods is None else pods)}
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta, "spec": {"hard": hard}}


def probe_replicaset(p: QuotaParams) -> dict[str, Any]:
    labels = {"app": PROBE}
    pod = {
        "schedulingGates": [{"name": "chaoskit.dev/never"}],  # counted by the quota, never placed nor run
        "containers": [{"name": "probe", "image": WORKLOAD_IMAGE, "imagePullPolicy": "Never"}],
    }
    meta = {"name": PROBE, "namespace": p.namespace, "labels": {FAULT_LABEL: NAME}}
    spec = {
        "replicas": p.probe_replicas,
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": pod},
    }
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta, "spec": spec}


def _applied(obj: dict[str, Any]) -> str:
    return f"printf '%s\\n' {shlex.quote(json.dumps(obj, separators=(',', ':')))} | {kubectl('apply', '-f', '-')}"


def refusals(events: list[dict[str, Any]], since: float) -> list[dict[str, Any]]:
    """FailedCreate events, last seen at or after `since`, that name chaoskit's quota as the reason."""
    found = []
    for e in events:
        seen = api_time(e.get("lastTimestamp") or e.get("eventTime") or e.get("metadata", {}).get("creationTimestamp"))
        message = e.get("message") or ""
        if e.get("reason") == "FailedCreate" and f"{REFUSED}: {QUOTA}" in message and (seen or 0) >= since - 1:
            found.append(e)
    return found


@register
class QuotaExhausted(Fault):
    """A ResourceQuota caps a namespace's pods, so a scale-out's pod creations are refused while all is healthy.

    The document's controller table puts quota management under the controller manager: quotas cap how far a
    scale-out goes. Its setup creates ResourceQuota `chaoskit-quota` in `namespace` with hard pods 500 (above any
    demand: the effect check is first asked of a quota that stands) and waits until the resource quota controller
    has filled its status (until then the API server refuses every pod there as "status unknown"); the fault lowers
    the cap to `pods`, waits until the status says so, then, unless `probeReplicas` is 0, creates a probe ReplicaSet
    asking for more pods than the cap (its pods are gated: they never run). When an HPA raises its Deployment above
    the cap, the ReplicaSet controller's pod creations are refused by the API server's quota admission: FailedCreate
    events "exceeded quota: chaoskit-quota, requested: pods=1, used: pods=N, limited: pods=N", and the scale-up
    stops at pod creation.
    No component is broken. Effect: such FailedCreate events, seen after the quota was made. The revert deletes
    the probe, the quota (only the one labelled chaoskit.dev/fault=controller-manager.quota-exhausted) and the
    namespace if the fault made it; the ReplicaSet controller then creates the missing pods on its next retry
    (its back-off grows with every refusal). Recovery: every ReplicaSet the quota refused that is still there (the
    workload's) has created all its pods, and the quota is gone. Runs kubectl on the control-plane node.
    """

    name = NAME
    component = "controller-manager"
    named = Named("workloads", r"ResourceQuota chaoskit-quota .*exceeded quota")
    no_op = NoOpControl(wait=15.0)  # the probe's pods are refused within seconds
    scope = "namespace"
    Params = QuotaParams
    effect_timeout = 120.0  # with probeReplicas 0 the HPA has to ask first
    recovery_timeout = 120.0  # namespace deletion

    def radius(self, node: Node, params: BaseModel) -> Radius:
        return Radius(
            "namespace", params_of(params, QuotaParams).namespace, self.component
        )  # only that namespace's pods are capped

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        p = params_of(params, QuotaParams)
        ns = p.namespace
        hard = kubectl("get", "resourcequota", "-n", ns, QUOTA, "-o", "jsonpath={.status.hard.pods}")

        def synced(pods: int) -> str:  # the quota controller has copied the cap into the status admission reads
            return (
                f'i=0; until [ "$({hard})" = "{canonical(pods)}" ]; do i=$((i+1)); '
                f'if [ $i -ge {STATUS_WAIT_S} ]; then echo "quota {ns}/{QUOTA}: status not at {pods} pods" >&2; '
                "exit 1; fi; sleep 1; done"
            )

        # what the effect check reads is made in setup, above any demand (so "in effect? no" is asked of a quota
        # that stands); apply lowers it to the cap
        above = max(ABOVE_DEMAND, p.pods + 1)
        setup = (ensure_namespace(ns, self.name), _applied(quota_object(p, above)), synced(above))
        lower = json.dumps({"spec": {"hard": {"pods": str(p.pods)}}}, separators=(",", ":"))
        apply = [kubectl("patch", "resourcequota", "-n", ns, QUOTA, "--type=merge", "-p", lower), synced(p.pods)]
        if p.probe_replicas:
            apply.append(_applied(probe_replicaset(p)))
        ours = f"{FAULT_LABEL}={self.name}"
        return FaultPlan(
            self.name,
            node,
            apply=tuple(apply),
            undo=(
                tolerating_absent(kubectl("delete", "replicaset", "-n", ns, PROBE, "--ignore-not-found")),
                tolerating_absent(kubectl("delete", "resourcequota", "-n", ns, "-l", ours, "--ignore-not-found")),
                delete_namespace_if_ours(ns, self.name),
            ),
            # kubectl prints the name of each quota of ours that stands (none in a namespace that is gone)
            verify=(listed_nowhere(kubectl("get", "resourcequota", "-n", ns, "-l", ours, "-o", "name"), ".", QUOTA),),
            setup=setup,
            summary=f"cap namespace {ns} at {p.pods} pod(s) with ResourceQuota {QUOTA} (made in setup at "
            f"{max(ABOVE_DEMAND, p.pods + 1)})"
            + (f"; a probe ReplicaSet asks for {p.probe_replicas}" if p.probe_replicas else ""),
            params=p,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        p = plan.params_as(QuotaParams)
        quota = env.kube.find(f"/api/v1/namespaces/{p.namespace}/resourcequotas/{QUOTA}")
        made = api_time((quota or {}).get("metadata", {}).get("creationTimestamp"))
        if made is None:
            return False
        events = env.kube.get(f"/api/v1/namespaces/{p.namespace}/events", fieldSelector="reason=FailedCreate")
        return bool(refusals(events.get("items") or [], made))

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        """Every ReplicaSet the quota refused (its FailedCreate events), still there, has created all its pods, and
        the quota is gone."""
        p = plan.params_as(QuotaParams)
        events = env.kube.get(f"/api/v1/namespaces/{p.namespace}/events", fieldSelector="reason=FailedCreate")
        refused = {
            e["involvedObject"]["name"]
            for e in refusals(events.get("items") or [], 0.0)
            if e.get("involvedObject", {}).get("kind") == "ReplicaSet"
        }
        for name in sorted(refused):
            rs = env.kube.find(f"/apis/apps/v1/namespaces/{p.namespace}/replicasets/{name}")
            if rs is None or rs["metadata"].get("deletionTimestamp"):
                continue  # gone (the probe, deleted by the revert): nothing of it waits to be created
            if int((rs.get("status") or {}).get("replicas") or 0) < int(rs["spec"].get("replicas") or 0):
                return False
        return env.kube.find(f"/api/v1/namespaces/{p.namespace}/resourcequotas/{QUOTA}") is None
