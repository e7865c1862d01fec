"""`chaoskit validate`'s node check: each step's `target.node` against the node names of the cluster it will run on.

The rule, as kubectl users expect it: the cluster is the one `chaoskit run` would use (the global --context, else
kind-<--cluster or the playbook's spec.cluster). One named on the command line (--cluster, --context) must answer,
as kubectl fails on a cluster it cannot reach; the playbook's own cluster is asked only when the kubeconfig has its
context and it answers, else the check is skipped and said (so CI with no cluster validates as before). --offline
never asks a cluster. Only a playbook that names a node by name is checked: roles and "any" need no cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from chaoskit.cli import Globals
from chaoskit.errors import ChaoskitError, Problem, ToolError, UsageError
from chaoskit.model.kwok import REAL_NODES_SELECTOR
from chaoskit.model.playbook import Playbook
from chaoskit.playbook.nodes import named_nodes, unknown_node_problems
from chaoskit.seams.kube import Kube
from chaoskit.seams.kubeconfig import read_contexts

NodeLister = Callable[[str | None, str], list[str]]  # (kubeconfig, context) → the cluster's node names


def cluster_nodes(kubeconfig: str | None, context: str) -> list[str]:
    """The real nodes' names (kwok's simulated ones carry no fault)."""
    items = Kube.connect(kubeconfig, context).get("/api/v1/nodes", labelSelector=REAL_NODES_SELECTOR)["items"]
    return sorted(str(n["metadata"]["name"]) for n in items)


@dataclass
class NodeCheck:
    """The node check of one `chaoskit validate`: where each playbook's cluster is, its nodes listed once."""

    globals: Globals | None
    cluster: str | None  # --cluster
    offline: bool
    lister: NodeLister = cluster_nodes
    notes: list[str] = field(default_factory=list)  # checks skipped, and why
    _nodes: dict[str, list[str] | None] = field(default_factory=dict)

    def problems(self, file: str, playbook: Playbook) -> list[Problem]:
        source = Path(file).read_bytes()
        if not named_nodes(source, file):
            return []
        if self.offline:
            self.notes.append(f"{file}: nodes not checked (--offline)")
            return []
        context = self._context(playbook)
        nodes = self._nodes_of(context)
        if nodes is None:
            self.notes.append(
                f"{file}: nodes not checked: cluster {context} not reachable (name one with --cluster or --context; "
                "--offline skips the check)"
            )
            return []
        return unknown_node_problems(source, file, nodes, context)

    def _named(self) -> bool:
        return bool(self.cluster or (self.globals and self.globals.context))

    def _context(self, playbook: Playbook) -> str:
        if self.globals is not None and self.globals.context:
            return self.globals.context
        return f"kind-{self.cluster or playbook.spec.cluster}"

    def _nodes_of(self, context: str) -> list[str] | None:
        if context not in self._nodes:
            self._nodes[context] = self._list(context)
        return self._nodes[context]

    def _list(self, context: str) -> list[str] | None:
        kubeconfig = self.globals.kubeconfig if self.globals else None
        if read_contexts(kubeconfig).server(context) is None:
            if self._named():
                raise UsageError(f"no context {context} in the kubeconfig; --offline skips the node check")
            return None
        try:
            return self.lister(kubeconfig, context)
        except (ChaoskitError, OSError) as exc:
            if self._named():
                raise ToolError(f"cannot list the nodes of {context}: {exc}; --offline skips the node check") from exc
            return None
