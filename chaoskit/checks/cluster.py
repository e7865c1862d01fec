"""Cluster-wide health checks: nodes, API server, system pods, the control plane's leaders."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from chaoskit.checks.base import Check, Outcome, register
from chaoskit.components import table
from chaoskit.components.leases import LeaseState
from chaoskit.env import Env
from chaoskit.figures import seconds
from chaoskit.model.kwok import named
from chaoskit.seams.kube import KubeError, condition

LEADERS = tuple((c.name, c.lease) for c in table.LEADERS)


class NodeChecks(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    except_nodes: list[str] = Field(
        default_factory=list,
        alias="exceptNodes",
        description="Nodes not judged (nor their pods): in a suite, chaoskit adds the nodes another run is breaking.",
    )


def _all_ready(
    objs: list[dict[str, Any]],
    what: str,
    skipped: list[str] | None = None,
    name: Callable[[dict[str, Any]], str] = lambda o: str(o["metadata"]["name"]),
) -> Outcome:
    bad = [name(o) for o in objs if not condition(o, "Ready")]
    left_out = f" (not judged: {', '.join(skipped)})" if skipped else ""
    if bad:
        return Outcome(False, f"not Ready: {', '.join(bad)}{left_out}")
    return Outcome(bool(objs), f"{len(objs)} {what} Ready{left_out}")


def _except(params: BaseModel) -> list[str]:
    return list(getattr(params, "except_nodes", []))


@register
class NodesReady(Check):
    """Every node reports Ready, simulated ones too: the control plane counts them as nodes (a NotReady one is
    named as simulated, its cause being kwok's controller, not a kubelet)."""

    name = "nodes-ready"
    Params = NodeChecks

    def run(self, env: Env, params: BaseModel) -> Outcome:
        skip = _except(params)
        nodes = [n for n in env.kube.get("/api/v1/nodes")["items"] if n["metadata"]["name"] not in skip]
        return _all_ready(nodes, "nodes", skip, named)


@register
class ApiServerReady(Check):
    """The API server's /readyz answers ok (every readiness check, etcd included, passes)."""

    name = "apiserver-ready"

    def run(self, env: Env, params: BaseModel) -> Outcome:
        try:
            body = env.kube.raw("/readyz").strip()
        except KubeError as exc:
            return Outcome(False, str(exc).splitlines()[0])
        return Outcome(body == "ok", f"/readyz: {body[:200]}")


@register
class KubeSystemReady(Check):
    """Every pod in kube-system is Ready (control plane, kube-proxy, CoreDNS, metrics-server, pod network)."""

    name = "kube-system-ready"
    Params = NodeChecks

    def run(self, env: Env, params: BaseModel) -> Outcome:
        skip = _except(params)
        pods = env.kube.get("/api/v1/namespaces/kube-system/pods")["items"]
        return _all_ready([p for p in pods if p.get("spec", {}).get("nodeName") not in skip], "kube-system pods", skip)


@register
class LeadersRenewing(Check):
    """The scheduler and the controller manager each have a leader renewing its lease now (within a third of the
    lease's duration: stock renews every 2 s of 15 s). After an API-server or etcd outage longer than their renew
    deadline both exit, while their pods still read Ready (the kubelet could not write it): only the lease tells."""

    name = "leaders-renewing"
    Params = NodeChecks

    def run(self, env: Env, params: BaseModel) -> Outcome:
        skip, now = _except(params), time.time()
        late, leading = [], []
        for component, path in LEADERS:
            found = env.kube.find(path)
            if found is None:  # not leader-elected here (or a managed control plane): nothing to judge
                continue
            lease = LeaseState.of(found, now)
            if lease.holder.split("_")[0] in skip:  # a holder is "<node>_<uuid>"
                continue
            if lease.age is None or lease.age > lease.duration / 3:
                since = "never" if lease.age is None else f"{seconds(lease.age)} ago"
                late.append(f"{component} (renewed {since}, holder {lease.holder or 'none'})")
            else:
                leading.append(component)
        if late:
            return Outcome(False, f"no leader renewing: {', '.join(late)}")
        return Outcome(True, f"leading: {', '.join(leading)}" if leading else "no leader lease to judge")


@register
class ClusterHealthy(Check):
    """All of nodes-ready, apiserver-ready, kube-system-ready and leaders-renewing."""

    name = "cluster-healthy"
    Params = NodeChecks

    def run(self, env: Env, params: BaseModel) -> Outcome:
        outcomes = [c().run(env, params) for c in (ApiServerReady, NodesReady, KubeSystemReady, LeadersRenewing)]
        return Outcome(all(o.ok for o in outcomes), "; ".join(o.detail for o in outcomes))
