"""kube-proxy faults: frozen (new endpoints are not programmed into the node's rules)."""

from __future__ import annotations

from chaoskit.faults.base import register
from chaoskit.faults.control_plane import ProcessFrozen


@register
class KubeProxyFrozen(ProcessFrozen):
    """kube-proxy frozen (SIGSTOP) on one node: rules stay as they were, so endpoints added or removed meanwhile
    (an HPA scale-up) get no traffic from that node, or keep getting it, until it thaws and resyncs."""

    name = "kube-proxy.freeze"
    component = "kube-proxy"
    target_role = "worker"
    process = "kube-proxy"
