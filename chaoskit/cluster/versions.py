"""Every pinned version chaoskit builds or runs; the cache keys derive from these.

Kubernetes 1.34 is the newest release whose kubelet still runs on cgroup v1 by
default (1.35 refuses it unless failCgroupV1=false, and cgroup v1 is on its way
out); our hosts mount cgroup v1 only.
"""

from __future__ import annotations

from typing import Final

KUBERNETES: Final = "v1.34.4"
# What kubeadm v1.34 asks for (cmd/kubeadm/app/constants); the images must carry exactly these tags.
ETCD: Final = "v3.6.5"
ETCD_IMAGE_TAG: Final = "3.6.5-0"
PAUSE: Final = "3.10.1"
COREDNS: Final = "v1.12.1"
KIND: Final = "v0.30.0"
CRICTL: Final = "v1.34.0"
METRICS_SERVER: Final = "v0.8.0"
# simulated nodes: kwok plays kubelet for Node objects that no machine stands behind
KWOK: Final = "v0.8.0"
# the chart in deploy/helm is installed and tested with this helm, built from the module proxy like kind
HELM: Final = "v4.3.2"
DEBIAN_SUITE: Final = "bookworm"
DEBIAN_MIRROR: Final = "http://deb.debian.org/debian"
# The stock image kind v0.30.0 pairs with 1.34, used when a registry is reachable.
STOCK_NODE_IMAGE: Final = "kindest/node:v1.34.0@sha256:7416a61b42b1662ca6ca89f02028ac133a309a2a30ba309614e8ec94d976dc5a"


def minor(version: str = KUBERNETES) -> str:
    """'v1.34.4' -> '34'."""
    return version.lstrip("v").split(".")[1]
