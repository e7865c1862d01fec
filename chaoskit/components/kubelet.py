"""kubelet: a systemd service on every node, where it answers, its files and its node's heartbeat lease."""

from __future__ import annotations

import time

from chaoskit.model.timeline import api_time
from chaoskit.seams.kube import Kube

SERVICE = "kubelet"  # the systemd unit
DIR = "/var/lib/kubelet"  # its root dir; a 4 GiB ext4 of its own in chaoskit's node image: kubelet's nodefs
CLIENT_PEM = f"{DIR}/pki/kubelet-client-current.pem"  # its client cert and key; a symlink to the dated file
HEALTHZ_PORT = 10248  # plain HTTP, on the node's loopback only
HEALTHZ = f"http://127.0.0.1:{HEALTHZ_PORT}/healthz"
PORT = 10250  # its authenticated API (/metrics, /healthz?verbose), asked by node name from the control plane
NODE_USER_PREFIX = "system:node:"  # a kubelet's user name to the API server: system:node:<its node>
ROUTINE_REFUSAL = "no relationship found between node"  # the Node authorizer on an object no longer the node's
# kubelet's journal when its client certificate changed (TLS bootstrap, rotation): it asks under a new identity since
CREDENTIALS_ROTATED = "Certificate rotation detected"
JOURNAL = "journalctl -u kubelet --since '-5 min' --no-pager -o short-iso"
# pod start latency as the SLO counts it (image pulls and init containers left out): a histogram since kubelet started
POD_START_SLI = "kubelet_pod_start_sli_duration_seconds"
CONFIG = f"{DIR}/config.yaml"  # its KubeletConfiguration (kubeadm writes it; evictionHard among it)
EVICTION_HARD = f"sed -n '/^evictionHard:/,/^[^ ]/p' {CONFIG}"  # the block, and the next key's line
DEFAULT_NODEFS_AVAILABLE = 10.0  # percent free kubelet keeps by default (nodefs.available<10%)


def eviction_hard(text: str) -> dict[str, str]:
    """The evictionHard thresholds of kubelet's config file, as written ("nodefs.available": "10%")."""
    out = {}
    for line in text.splitlines()[1:]:
        if not line.startswith(" "):
            break
        key, _, value = line.strip().partition(":")
        out[key.strip()] = value.strip().strip("\"'")
    return out


def percent(value: str | None) -> float | None:
    """A threshold's percent ("15%" → 15.0); None for an absolute quantity or nothing."""
    if value and value.endswith("%") and value[:-1].replace(".", "", 1).isdigit():
        return float(value[:-1])
    return None


def url(node: str, path: str) -> str:
    """An endpoint of the kubelet on `node`, as the API server asks it."""
    return f"https://{node}:{PORT}{path}"


def node_lease(node: str) -> str:
    """The Lease kubelet renews as its heartbeat."""
    return f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node}"


def node_ready(kube: Kube, node: str) -> bool | None:
    """True/False from the node's Ready condition; None when it is Unknown (heartbeats stopped)."""
    for c in kube.get(f"/api/v1/nodes/{node}").get("status", {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return {"True": True, "False": False}.get(c.get("status"))
    return None


def heartbeat(kube: Kube, node: str) -> tuple[float | None, float]:
    """How long ago kubelet on `node` last renewed its lease (None: never), and the lease's duration: kubelet renews
    it every quarter of that."""
    spec = kube.get(node_lease(node)).get("spec") or {}
    renewed = api_time(spec.get("renewTime"))
    return (None if renewed is None else max(0.0, time.time() - renewed)), float(spec.get("leaseDurationSeconds") or 40)
