"""Simulated nodes: Node objects that kwok keeps Ready with no machine, kubelet or kube-proxy behind them.

The one place that says which Nodes those are. The API server, the scheduler and the node lifecycle controller treat
them as nodes, so what judges those sees them (and says they are simulated); whatever runs a command in a node,
scrapes its kubelet or kube-proxy, or expects a DaemonSet's pod there, leaves them out. Pure data: both the cluster
build (which makes them) and the components (which read nodes) stand on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, TypeVar

# kwok manages the Nodes with this label (--manage-nodes-with-label-selector); nothing else carries it
SIMULATED_LABEL: Final = ("type", "kwok")
SIMULATED_SELECTOR: Final = f"{SIMULATED_LABEL[0]}={SIMULATED_LABEL[1]}"
# `!=` also keeps a Node without the label, as every real node is: for a labelSelector on /api/v1/nodes
REAL_NODES_SELECTOR: Final = f"{SIMULATED_LABEL[0]}!={SIMULATED_LABEL[1]}"
# Kubernetes' documented largest cluster; past about 250 nodes kind's pod CIDR (10.244.0.0/16, a /24 a node) runs out
# and a simulated node's pods get kwok's own addresses
MAX_SIMULATED_NODES: Final = 5000
# on every simulated node: only a pod that tolerates it lands there
TAINT: Final = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}

Node = TypeVar("Node", bound=Mapping[str, Any])


def is_simulated(node: Mapping[str, Any]) -> bool:
    """Whether a Node object is one of kwok's."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(SIMULATED_LABEL[0]) == SIMULATED_LABEL[1])


def real_nodes(items: Iterable[Node]) -> list[Node]:
    """The Nodes a machine stands behind, in their order."""
    return [n for n in items if not is_simulated(n)]


def named(node: Mapping[str, Any]) -> str:
    """A Node's name as findings say it: a simulated one says so."""
    name = str((node.get("metadata") or {}).get("name", ""))
    return f"{name} (simulated by kwok)" if is_simulated(node) else name
