"""containerd, the container runtime: its process and how kubelet's CRI is asked (crictl over its socket)."""

from __future__ import annotations

from chaoskit.seams.nodeexec import NodeExec

PROCESS = "containerd"
SERVICE = "containerd"  # the systemd unit


def cri_answers(nodes: NodeExec, node: str) -> bool:
    """The CRI on `node` answers as kubelet would ask it (crictl over containerd's socket)."""
    return nodes.run(node, ["crictl", "--timeout", "3s", "info"], check=False, timeout=10).returncode == 0
