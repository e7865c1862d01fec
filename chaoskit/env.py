"""Env: the seams a fault, check, measurement or diagnoser may touch — the API server and the nodes — and `connect`,
the one way every entry point (the CLI, the operator, the pytest plugin, the benchmarks) reaches a cluster.

Unit tests build an Env from fakes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from chaoskit.components import apiserver
from chaoskit.errors import UsageError
from chaoskit.seams.kube import Kube, KubeError
from chaoskit.seams.kubeconfig import read_contexts, same_server
from chaoskit.seams.nodecontainers import NodeContainer, node_containers
from chaoskit.seams.nodeexec import DockerNodeExec, Node, NodeExec
from chaoskit.seams.shell import Runner, SubprocessRunner

# how the nodes are reached: docker exec into kind's node containers on this host, the node agents of an install
# (their credentials kept locally), or those agents from inside the cluster (the operator's pod); auto: docker where
# the cluster's node containers are here, else the agents
Via = Literal["auto", "docker", "agent"]


@dataclass(frozen=True)
class Env:
    """The seams a fault may touch."""

    kube: Kube
    nodes: NodeExec
    cluster: str

    @classmethod
    def for_kind(cls, kube: Kube, cluster: str, shell: Runner | None = None) -> Env:
        """A kind cluster's seams: its nodes are containers reached by `docker exec` through `shell`."""
        return cls(kube, DockerNodeExec(shell or SubprocessRunner(), cluster), cluster)


def connect(
    cluster: str,
    context: str | None = None,
    *,
    kubeconfig: str | None = None,
    via: Via = "auto",
    named: bool = False,
    kube: Kube | None = None,
    runner: Runner | None = None,
    agent_tls: Path | None = None,
    lazy: bool = False,
) -> Env:
    """The seams of `cluster` through kubeconfig `context` (default kind-<cluster>), its nodes listed once. A
    context that was `named` and that the kubeconfig lacks, and one whose API server is not the kind cluster whose
    nodes would be reached, are refused before anything is read (UsageError). `kube` is a client already made (the
    operator's in-cluster one); `agent_tls` the agents' client pair mounted in the operator's pod; `lazy` connects
    on the first API request."""
    context = context or f"kind-{cluster}"
    if named:
        known_context(kubeconfig, context)
    nodes = _nodes(cluster, context, kubeconfig, via, kube, runner or SubprocessRunner(), agent_tls)
    return Env(kube or Kube.connect(kubeconfig, context, lazy=lazy), nodes, cluster)


def _nodes(
    cluster: str, context: str, kubeconfig: str | None, via: Via, kube: Kube | None, runner: Runner, tls: Path | None
) -> NodeExec:
    """How the nodes of `cluster` are reached: the one place a node provider is chosen."""
    from chaoskit.cluster.install import LocalInstall, in_cluster_node_exec  # on use: kind needs no agents

    if tls is not None:  # inside the cluster: the agents, with the pair mounted from their Secret
        return in_cluster_node_exec(kube or Kube.in_cluster(), tls)
    docker = DockerNodeExec(runner, cluster)
    found = node_containers(runner, cluster, apiserver.PORT) if via != "agent" else []
    if found or via == "docker":
        same_cluster(kubeconfig, context, cluster, found)
        return replace(docker, known=tuple(Node(c.name, c.role) for c in found)) if found else docker  # listed once
    local = LocalInstall.for_context(context)
    if not local.present:
        try:
            local.save(kube or Kube.connect(kubeconfig, context))
        except KubeError as exc:
            if via == "agent":
                raise UsageError(
                    f"chaoskit's agents are not reachable for context {context!r}: {exc}; `chaoskit install` puts "
                    "them there"
                ) from exc
            return docker  # neither: callers say there is no such cluster
    return local.node_exec()


def known_context(kubeconfig: str | None, context: str) -> None:
    """Refuses a context the kubeconfig does not have, before anything is read (kubectl's way)."""
    if (contexts := read_contexts(kubeconfig)).server(context) is None:
        known = ", ".join(sorted(contexts.servers)) or "none"
        raise UsageError(f"no context {context!r} in the kubeconfig (it has: {known}); nothing was read")


def same_cluster(kubeconfig: str | None, context: str, cluster: str, containers: list[NodeContainer]) -> None:
    """Refuses a context whose API server is not the kind cluster whose node containers chaoskit would `docker exec`
    into: API calls and node commands would reach two clusters."""
    server = read_contexts(kubeconfig).server(context)
    published = next((c.api for c in containers if c.api), "")
    if not server or not published or same_server(server, published):
        return  # no such context (the API side says so when asked), or nothing published to compare with
    raise UsageError(
        f"context {context!r} points at {server}, but kind cluster {cluster!r} (whose nodes chaoskit would reach "
        f"with docker exec) serves its API at {published}: name the context of that cluster (--context "
        f"kind-{cluster}) or the cluster of that context (--cluster); nothing was read"
    )
