"""Cluster-wide health checks: nodes, API server, system pods."""

from __future__ import annotations

from pydantic import BaseModel

from chaoskit.checks.base import Check, Outcome, register
from chaoskit.cluster.kube import KubeError, condition
from chaoskit.faults.base import Env


@register
class NodesReady(Check):
    """Every node reports Ready."""

    name = "nodes-ready"

    def run(self, env: Env, params: BaseModel) -> Outcome:
        nodes = env.kube.get("/api/v1/nodes")["items"]
        bad = [n["metadata"]["name"] for n in nodes if not condition(n, "Ready")]
        return Outcome(not bad and bool(nodes), f"not Ready: {', '.join(bad)}" if bad else f"{len(nodes)} nodes Ready")


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

    def run(self, env: Env, params: BaseModel) -> Outcome:
        pods = env.kube.get("/api/v1/namespaces/kube-system/pods")["items"]
        bad = [p["metadata"]["name"] for p in pods if not condition(p, "Ready")]
        return Outcome(not bad, f"not Ready: {', '.join(bad)}" if bad else f"{len(pods)} kube-system pods Ready")


@register
class ClusterHealthy(Check):
    """All of nodes-ready, apiserver-ready and kube-system-ready."""

    name = "cluster-healthy"

    def run(self, env: Env, params: BaseModel) -> Outcome:
        outcomes = [c().run(env, params) for c in (ApiServerReady, NodesReady, KubeSystemReady)]
        return Outcome(all(o.ok for o in outcomes), "; ".join(o.detail for o in outcomes))
