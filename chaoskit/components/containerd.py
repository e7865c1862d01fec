"""containerd, the container runtime: its process and how kubelet's CRI is asked (crictl over its socket)."""

from __future__ import annotations

from chaoskit.errors import ToolError
from chaoskit.seams.nodeexec import Node, NodeExec

PROCESS = "containerd"
SERVICE = "containerd"  # the systemd unit


HUNG = "DeadlineExceeded"  # gRPC's code for a runtime that took the call and never answered it


def cri_answers(nodes: NodeExec, node: Node) -> bool:
    """The CRI on `node` answers as kubelet would ask it (crictl over containerd's socket): yes, or no where the call
    hangs past its deadline; a crictl that fails otherwise (missing, the node unreachable) is no answer either way."""
    done = nodes.run(node, ["crictl", "--timeout", "3s", "info"], check=False, timeout=10)
    if done.returncode == 0:
        return True
    said = f"{done.stdout}\n{done.stderr}"
    if HUNG in said or "context deadline exceeded" in said:
        return False
    raise ToolError(f"could not ask the CRI on {node.name}: {said.strip()[-200:] or f'exit {done.returncode}'}")
