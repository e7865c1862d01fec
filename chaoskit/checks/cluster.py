"""Cluster-wide health checks: nodes, API server, system pods."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from chaoskit.checks.base import Check, Outcome, register
from chaoskit.cluster.kube import KubeError, condition
from chaoskit.env import Env


class NodeChecks(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    except_nodes: list[str] = Field(
        default_factory=list,
        alias="exceptNodes",
        description="Nodes not judged (nor their pods): in a suite, chaoskit adds the nodes another run is breaking.",
    )


def _all_ready(objs: list[dict[str, Any]], what: str, skipped: list[str] | None = None) -> Outcome:
    bad = [o["metadata"]["name"] for o in objs if not condition(o, "Ready")]
    left_out = f" (not judged: {', '.join(skipped)})" if skipped else ""
    if bad:
        return Outcome(False, f"not Ready: {', '.join(bad)}{left_out}")
    return Outcome(bool(objs), f"{len(objs)} {what} Ready{left_out}")


def _except(params: BaseModel) -> list[str]:
    return list(getattr(params, "except_nodes", []))


@register
class NodesReady(Check):
    """Every node reports Ready."""

    name = "nodes-ready"
    Params = NodeChecks

    def run(self, env: Env, params: BaseModel) -> Outcome:
        skip = _except(params)
        nodes = [n for n in env.kube.get("/api/v1/nodes")["items"] if n["metadata"]["name"] not in skip]
        return _all_ready(nodes, "nodes", skip)


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
class ClusterHealthy(Check):
    """All of nodes-ready, apiserver-ready and kube-system-ready."""

    name = "cluster-healthy"
    Params = NodeChecks

    def run(self, env: Env, params: BaseModel) -> Outcome:
        outcomes = [c().run(env, params) for c in (ApiServerReady, NodesReady, KubeSystemReady)]
        return Outcome(all(o.ok for o in outcomes), "; ".join(o.detail for o in outcomes))
