"""The simulated Node objects: named, labelled, tainted and sized as kwok's controller expects to find them."""

from __future__ import annotations

import re
from typing import Any, Final

from chaoskit.cluster import versions
from chaoskit.model.kwok import SIMULATED_LABEL, TAINT

Obj = dict[str, Any]

PREFIX: Final = "kwok-node-"
# what kwok's own examples mark a fake node with; chaoskit selects by the label alone (chaoskit.model.kwok)
ANNOTATION: Final = ("kwok.x-k8s.io/node", "fake")
# no pod lands on a simulated node unless it tolerates this: pods there run nothing
# room for a kubelet's default pod count, on a machine large enough that CPU or memory never decide a placement
CAPACITY: Final = {"cpu": "32", "memory": "256Gi", "pods": "110"}
_INDEXED = re.compile(rf"^{re.escape(PREFIX)}(\d+)$")


def node_name(index: int) -> str:
    return f"{PREFIX}{index}"


def index_of(name: str) -> int | None:
    """The index in a simulated node's name; None for any other name."""
    m = _INDEXED.match(name)
    return int(m.group(1)) if m else None


def fake_node(index: int) -> Obj:
    """Simulated node `index`: a Node may be created with its status, so the scheduler sees its capacity at once."""
    name = node_name(index)
    labels = {
        SIMULATED_LABEL[0]: SIMULATED_LABEL[1],
        "kubernetes.io/role": "agent",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "app.kubernetes.io/managed-by": "chaoskit",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {ANNOTATION[0]: ANNOTATION[1]}},
        "spec": {"taints": [dict(TAINT)]},
        "status": {
            "capacity": dict(CAPACITY),
            "allocatable": dict(CAPACITY),
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                # what `kubectl get nodes` shows as VERSION: no kubelet, kwok's release
                "kubeletVersion": f"kwok-{versions.KWOK}",
                "kubeProxyVersion": "",
                "containerRuntimeVersion": f"kwok://{versions.KWOK}",
                "kernelVersion": "",
                "osImage": "simulated by kwok",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        },
    }


def fake_nodes(count: int) -> list[Obj]:
    """Simulated nodes 0 to count-1."""
    return [fake_node(i) for i in range(count)]
