"""kind's node containers as Docker lists them: what DockerNodeExec runs in, and what `cluster up` waits for.

kind identifies a cluster's node containers by the label io.x-k8s.kind.cluster, their role by io.x-k8s.kind.role.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from chaoskit.seams.shell import Runner

CLUSTER_LABEL = "io.x-k8s.kind.cluster"
ROLE_LABEL = "io.x-k8s.kind.role"


@dataclass(frozen=True)
class NodeContainer:
    name: str
    role: str
    image: str
    state: str
    api: str = ""  # where Docker publishes its API server's port ("127.0.0.1:33159"), on a control plane


def node_containers(runner: Runner, cluster: str, api_port: int | None = None) -> list[NodeContainer]:
    """The cluster's node containers, from Docker alone (works without the kind binary); with `api_port`, the API
    server's port inside the node, where Docker publishes it as well."""
    out = runner.run(
        ["docker", "ps", "-a", "--filter", f"label={CLUSTER_LABEL}={cluster}", "--format", "{{json .}}"]
    ).stdout
    nodes = []
    for line in out.splitlines():
        row = json.loads(line)
        labels = dict(kv.split("=", 1) for kv in row.get("Labels", "").split(",") if "=" in kv)
        ports = str(row.get("Ports", "")).split(", ")
        api = next((p.split("->")[0] for p in ports if api_port and p.endswith(f"->{api_port}/tcp")), "")
        nodes.append(NodeContainer(row["Names"], labels.get(ROLE_LABEL, ""), row["Image"], row["State"], api))
    return sorted(nodes, key=lambda n: (n.role != "control-plane", n.name))  # as nodeexec.ordered
