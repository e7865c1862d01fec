"""kubelet faults: stopped (node NotReady after the grace period), container runtime unresponsive, DiskPressure,
client certificate expired."""

from __future__ import annotations

import shlex

from pydantic import BaseModel, Field

from chaoskit.components import containerd, kubelet
from chaoskit.env import Env
from chaoskit.faults.base import (
    Fault,
    FaultPlan,
    Handoff,
    Named,
    NoOpControl,
    absent,
    every,
    failing,
    node_sh,
    register,
    sh,
    unexpired,
)
from chaoskit.faults.control_plane import ProcessFrozen
from chaoskit.model.params import FaultParams, params_of
from chaoskit.seams.certs import CA_KEY, expired_check, expired_client_pem
from chaoskit.seams.nodeexec import Node


def node_ready(env: Env, node: str) -> bool | None:
    return kubelet.node_ready(env.kube, node)


@register
class KubeletStopped(Fault):
    """kubelet stopped on a node: heartbeats stop and the node goes NotReady after the node-monitor grace period (50 s
    stock, 30 s on chaoskit's cluster).

    The node controller then taints the node and, after the toleration period, evicts its pods.
    """

    name = "kubelet.stop"
    component = "kubelet"
    named = Named("kubelet", r"not running|heartbeat")
    no_op = NoOpControl(wait=45.0)  # NotReady after the 30 s node-monitor grace period
    scope = "node"
    target_role = "worker"
    effect_timeout = 120.0

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        return FaultPlan(
            self.name,
            node,
            apply=(sh("systemctl", "stop", "kubelet"),),
            undo=(sh("systemctl", "start", "kubelet"),),
            verify=(failing("systemctl is-active --quiet kubelet", "kubelet is not active"),),
            summary=f"systemctl stop kubelet on {node.name}",
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return node_ready(env, plan.node.name) is not True

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return node_ready(env, plan.node.name) is True


@register
class ContainerRuntimeUnresponsive(ProcessFrozen):
    """containerd frozen (SIGSTOP): kubelet's CRI calls hang, PLEG goes unhealthy, pods stop starting on the node."""

    name = "kubelet.runtime-unresponsive"
    component = "kubelet"
    named = Named("containerd", r"containerd|runtime")
    no_op = NoOpControl(wait=10.0)  # CRI calls hang at once
    scope = "node"
    target_role = "worker"
    process = containerd.PROCESS

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return not containerd.cri_answers(env.nodes, plan.node)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return containerd.cri_answers(env.nodes, plan.node)


def node_condition(env: Env, node: str, kind: str) -> str | None:
    """The status ("True", "False", "Unknown") of one of the node's conditions, None if it has none of that type."""
    for c in env.kube.get(f"/api/v1/nodes/{node}").get("status", {}).get("conditions") or []:
        if c.get("type") == kind:
            return str(c.get("status"))
    return None


def node_tainted(env: Env, node: str, key: str) -> bool:
    return any(t.get("key") == key for t in env.kube.get(f"/api/v1/nodes/{node}")["spec"].get("taints") or [])


KUBELET_DIR = kubelet.DIR
FILL = f"{KUBELET_DIR}/chaoskit-disk-pressure.fill"
DISK_PRESSURE_TAINT = "node.kubernetes.io/disk-pressure"


class DiskPressureParams(FaultParams):
    free_percent: float = Field(
        default=5.0,
        gt=0,
        lt=10,
        description="Free space to leave on kubelet's filesystem, percent of its size; it must be under the "
        "eviction threshold (kind-config.yaml: nodefs.available 10%).",
    )


@register
class DiskPressure(Fault):
    """kubelet's filesystem filled past the eviction threshold: DiskPressure=True, node tainted, pods evicted.

    The node is tainted node.kubernetes.io/disk-pressure (no new pods) and kubelet evicts pods to reclaim space. One
    file, fallocated on /var/lib/kubelet, leaves `free_percent` of it free. That filesystem is the 4 GiB
    loop-mounted ext4 chaoskit's node image gives each node, so the host's disk is never touched (the apply refuses
    to run when /var/lib/kubelet is not a mount of its own). kind-config.yaml sets evictionHard nodefs.available 10%
    (kind's default is 0%, which never fires). The revert deletes the file; DiskPressure clears
    evictionPressureTransitionPeriod (10 s on chaoskit's cluster, 5 min stock) after kubelet last saw the pressure,
    then the taint goes. Critical pods (kube-proxy, the pod network) are never evicted; others on the node may be.
    """

    name = "kubelet.disk-pressure"
    component = "kubelet"
    named = Named("kubelet", r"DiskPressure|full")
    no_op = NoOpControl(wait=30.0)  # the eviction manager looks every 10 s
    scope = "node"
    target_role = "worker"
    Params = DiskPressureParams
    effect_timeout = 90.0  # kubelet's eviction manager looks every 10 s, after cadvisor's filesystem stats
    recovery_timeout = 180.0

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        p = params_of(params, DiskPressureParams)
        basis_points = round(p.free_percent * 100)
        return FaultPlan(
            self.name,
            node,
            apply=(
                f"mountpoint -q {KUBELET_DIR} || {{ echo '{KUBELET_DIR} is not a filesystem of its own: refusing to"
                f" fill the disk under it' >&2; exit 1; }}",
                f"set -- $(df -B1 --output=size,avail {KUBELET_DIR} | tail -n 1) && "
                f'fill=$(( $2 - $1 * {basis_points} / 10000 )) && [ "$fill" -gt 0 ] && fallocate -l "$fill" {FILL}',
            ),
            undo=(sh("rm", "-f", FILL),),
            verify=(absent(FILL),),
            summary=f"fallocate {KUBELET_DIR} on {node.name} until {p.free_percent:g}% of it is free",
            params=p,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return node_condition(env, plan.node.name, "DiskPressure") == "True" and node_tainted(
            env, plan.node.name, DISK_PRESSURE_TAINT
        )

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return node_condition(env, plan.node.name, "DiskPressure") == "False" and not node_tainted(
            env, plan.node.name, DISK_PRESSURE_TAINT
        )


CLIENT_PEM = kubelet.CLIENT_PEM
PARKED_PEM = f"{CLIENT_PEM}.chaoskit-parked"  # same directory: parking and restoring are renames
EXPIRED_PEM = f"{KUBELET_DIR}/pki/kubelet-client-chaoskit-expired.pem"  # handed over from the control-plane node
SINCE = "/run/chaoskit/kubelet-cert-expired.since"  # when the fault restarted kubelet: where its journal is read from
# What kubelet v1.34 logs when its client certificate has expired (bootstrap.LoadClientConfig), or a TLS peer's words.
EXPIRED_ERROR = "certificate.*(is|has) expired"


def kubelet_errors_since_injection(env: Env, node: Node) -> int:
    """Lines of kubelet's own journal on `node` since the fault restarted it that say its certificate expired."""
    read = (
        f'[ -s {SINCE} ] && journalctl -u kubelet --since "@$(cat {SINCE})" --no-pager -o cat'
        f" | grep -c -i -E {shlex.quote(EXPIRED_ERROR)}"
    )
    try:
        return int(node_sh(env, node, read).stdout.strip() or 0)
    except ValueError:
        return 0


@register
class KubeletCertExpired(Fault):
    """kubelet restarted with an expired client certificate it cannot renew: it crash-loops and the node goes NotReady.

    Certificate rotation failed and the certificate ran out: kubelet cannot authenticate to the API server, its
    heartbeats stop and the node goes NotReady after the grace period. The control-plane node, which alone holds the
    cluster CA key, signs a client certificate for the target node's identity (CN system:node:<node>, O
    system:nodes, a fresh key) that expired yesterday; only the certificate and its key are carried to the target
    node (the CA key never leaves), where it replaces kubelet-client-current.pem, and kubelet is restarted, as after a
    reboot past the expiry date. Rotation cannot rescue it: renewing needs a valid certificate, and kubeadm deletes
    the bootstrap kubeconfig after joining. So kubelet logs that "part of the existing bootstrap client certificate
    in /etc/kubernetes/kubelet.conf is expired", fails to load the bootstrap kubeconfig and exits; systemd restarts it
    every second, and `journalctl -u kubelet` shows the loop. Running pods keep running. Effect: kubelet's own
    journal since the restart says its certificate expired, and the API server's Node says the node is not Ready
    (heartbeats stopped, after the node-monitor grace period). Targets a worker; on the control-plane node the
    certificate is signed in place. The revert renames the original certificate back and restarts kubelet, on the
    node alone (no API server needed).
    """

    name = "kubelet.cert-expired"
    component = "kubelet"
    named = Named("kubelet", r"certificate.*expired")
    no_op = NoOpControl(wait=45.0)  # kubelet logs the expiry at its restart; NotReady after the 30 s grace
    scope = "node"
    target_role = "worker"
    effect_timeout = 120.0  # the node-monitor grace period, as for kubelet.stop
    recovery_timeout = 120.0

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        new = f"{EXPIRED_PEM}.new"
        sign_here = f"umask 077 && {{ {expired_client_pem(node.name)}; }} > {new} && mv {new} {EXPIRED_PEM}"
        return FaultPlan(
            self.name,
            node,
            setup=(f"mkdir -p {SINCE.rsplit('/', 1)[0]} && date +%s > {SINCE}",),  # kubelet's journal is read from here
            apply=(
                f"if [ -L {PARKED_PEM} ] || [ -e {PARKED_PEM} ]; then echo '{PARKED_PEM} exists: an earlier "
                "injection was not reverted (chaoskit revert)' >&2; exit 1; fi",
                # handed over from the control-plane node; that node itself signs in place
                f"[ -s {EXPIRED_PEM} ] || if [ -r {CA_KEY} ]; then {sign_here}; else echo 'no expired certificate was"
                f" handed over to {node.name} from the control-plane node, and no CA key here to sign one' >&2;"
                " exit 1; fi",
                f"{expired_check(EXPIRED_PEM)} && openssl pkey -in {EXPIRED_PEM} -noout || {{ echo '{EXPIRED_PEM}"
                " is not an expired certificate and its key' >&2; exit 1; }",
                f"mv {CLIENT_PEM} {PARKED_PEM} && mv {EXPIRED_PEM} {CLIENT_PEM}",
                sh("systemctl", "restart", "kubelet"),
            ),
            undo=(
                f"if [ -L {PARKED_PEM} ] || [ -e {PARKED_PEM} ]; then mv -f {PARKED_PEM} {CLIENT_PEM} && "
                "systemctl restart kubelet; fi",
                sh("rm", "-f", EXPIRED_PEM, f"{EXPIRED_PEM}.new", SINCE),
            ),
            # the original back (kubelet-client-current.pem is a symlink to it), unexpired, and nothing parked
            verify=(every(absent(PARKED_PEM, EXPIRED_PEM), unexpired(CLIENT_PEM)),),
            summary=f"restart kubelet on {node.name} with a client certificate that expired yesterday",
            params=params,
            handoffs=(Handoff("control-plane", expired_client_pem(node.name), EXPIRED_PEM),),
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return kubelet_errors_since_injection(env, plan.node) > 0 and node_ready(env, plan.node.name) is not True

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return node_ready(env, plan.node.name) is True
