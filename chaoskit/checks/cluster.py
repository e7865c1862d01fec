"""Cluster-wide health checks: nodes, API server, system pods."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from chaoskit.checks.base import Check, Outcome, register
from chaoskit.cluster.kube import KubeError, condition
from chaoskit.faults.base import Env


def _all_ready(objs: list[dict[str, Any]], what: str) -> Outcome:
    bad = [o["metadata"]["name"] for o in objs if not condition(o, "Ready")]
    return Outcome(not bad and bool(objs), f"not Ready: {', '.join(bad)}" if bad else f"{len(objs)} {what} Ready")


@register
class NodesReady(Check):
    """Every node reports Ready."""

    name = "nodes-ready"

    def run(self, env: Env, params: BaseModel) -> Outcome:
        return _all_ready(env.kube.get("/api/v1/nodes")["items"], "nodes")


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
        return _all_ready(env.kube.get("/api/v1/namespaces/kube-system/pods")["items"], "kube-system pods")


@register
class ClusterHealthy(Check):
    """All of nodes-ready, apiserver-ready and kube-system-ready."""

    name = "cluster-healthy"

    def run(self, env: Env, params: BaseModel) -> Outcome:
        outcomes = [c().run(env, params) for c in (ApiServerReady, NodesReady, KubeSystemReady)]
        return Outcome(all(o.ok for o in outcomes), "; ".join(o.detail for o in outcomes))
