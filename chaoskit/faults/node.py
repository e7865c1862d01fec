"""A node that loses contact with the control plane: the Node Controller's story (heartbeats stop → NotReady →
`unreachable` taint → its pods evicted at their toleration → replaced elsewhere).

kubelet and kube-proxy keep running; only the path between the node and the API server is cut, as a broken link or
a firewall would. That is not `kubelet.stop`: the node's own view is healthy, its pods keep serving locally, and only
the API server's side of the story moves.
"""

from __future__ import annotations

from pydantic import BaseModel

from chaoskit.components import kubelet
from chaoskit.env import Env
from chaoskit.faults.base import Fault, FaultPlan, Named, NoOpControl, listed_nowhere, node_sh, register
from chaoskit.seams.nodeexec import Node

TABLE = "chaoskit-partition"  # an nftables table of chaoskit's own in the node's network namespace
KUBECONFIG = "/etc/kubernetes/kubelet.conf"  # where kubelet reads the API server's address
# Every address of the API server's host as the node's kubelet dials it (kubelet.conf's `server:`), IPv4 and IPv6
# alike: Go's dialer takes whichever family answers first, so cutting one leaves the other open.
API_ADDRESSES = (
    f"server=$(sed -n 's/^ *server: *//p' {KUBECONFIG} | head -n 1); host=${{server#*://}}; host=${{host%%/*}};"
    " host=${host%:*}; host=${host#[}; host=${host%]}"  # the host alone: no scheme, path, port or IPv6 brackets
    ' && addrs=$(getent ahosts "$host" | awk \'{print $1}\' | sort -u) && [ -n "$addrs" ]'
    f" || {{ echo 'cannot resolve the API server named in {KUBECONFIG}' >&2; exit 1; }}"
)


def partition_rules() -> str:
    """nft lines that drop every packet between this node and each of `$addrs` (the control-plane node), both ways,
    for the node's own processes (output, input) and its pods (forward)."""
    t = f"inet {TABLE}"
    chains = " && ".join(  # priority raw (-300): ahead of kube-proxy's and the pod network's own filters
        f"nft add chain {t} {chain} '{{ type filter hook {hook} priority raw; }}'"
        for chain, hook in (("cut_out", "output"), ("cut_in", "input"), ("cut_pods", "forward"))
    )
    rules = " && ".join(
        f"nft add rule {t} {chain} $f {side} $a counter drop"
        for chain, side in (("cut_out", "daddr"), ("cut_in", "saddr"), ("cut_pods", "daddr"), ("cut_pods", "saddr"))
    )
    return (
        f"nft add table {t} && {chains} && for a in $addrs; do case $a in *:*) f=ip6;; *) f=ip;; esac;"
        f" {rules} || exit 1; done"
    )


def stale_after(duration: float) -> float:
    """A lease not renewed for half its duration missed two renewals (kubelet renews every quarter): the heartbeat
    has stopped reaching the API server, well before the node controller's grace period says so."""
    return duration / 2


@register
class NodePartitioned(Fault):
    """The node cut off from the control plane (its traffic with the API server's node dropped, both ways): kubelet
    cannot renew its lease or post status, kube-proxy gets no more updates, the node goes NotReady after the
    node-monitor grace period and is tainted `node.kubernetes.io/unreachable`; each pod on it is evicted when its
    toleration of that taint runs out (300 s by default) and replaced on another node.

    The rules live in an nftables table of chaoskit's own in the node's network namespace, which kube-proxy's
    iptables or nftables rules never touch; the revert deletes the table and fails while it is still there. kubelet
    reconnects by itself once packets flow again (its connections' own health checks), and the node comes back Ready.
    Effect: kubelet still runs on the node, but its heartbeat lease has not been renewed for half its duration (two
    missed renewals), as the API server sees it. Recovery: the lease is renewed again and the node is Ready.
    """

    name = "node.partitioned"
    component = "node"
    named = Named("kubelet", r"cut off from the API server|partition")  # the node's kubelet is what loses contact
    no_op = NoOpControl(wait=25.0)  # the lease goes stale 10 s in on chaoskit's cluster (renewed every 5 s)
    # what runs on the node is cut off too, whoever relies on it: the API server cannot reach metrics-server or a
    # webhook there, and a DNS replica there keeps its endpoint until the node goes NotReady
    scope = "cluster"
    target_role = "worker"
    effect_timeout = 90.0  # half the lease duration: 10 s on chaoskit's cluster, 20 s stock
    recovery_timeout = 180.0  # kubelet's broken connections time out on their own before it reconnects

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        return FaultPlan(
            self.name,
            node,
            apply=(
                f"if nft list table inet {TABLE} >/dev/null 2>&1; then echo 'nftables table {TABLE} exists: an "
                "earlier injection was not reverted (chaoskit revert)' >&2; exit 1; fi",
                f"{API_ADDRESSES} && {partition_rules()}",
            ),
            undo=(f"nft delete table inet {TABLE} 2>/dev/null; true",),
            # read from a listing nft gave: a failing `nft list table` is no proof the table is gone
            verify=(listed_nowhere("nft list tables", f"^table inet {TABLE}$", f"nftables table {TABLE}"),),
            summary=f"drop all traffic between {node.name} and the API server's node (nftables table {TABLE})",
            params=params,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        age, duration = kubelet.heartbeat(env.kube, plan.node.name)
        stale = age is None or age > stale_after(duration)
        return stale and node_sh(env, plan.node, "systemctl is-active --quiet kubelet").returncode == 0

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        age, duration = kubelet.heartbeat(env.kube, plan.node.name)
        return age is not None and age <= stale_after(duration) and kubelet.node_ready(env.kube, plan.node.name) is True
