"""What several components share: the static-pod manifests kubelet runs the control plane from (kubeadm), process
names as the kernel keeps them, and the shell lines that find a component's process and containers in a node."""

from __future__ import annotations

import re

MANIFESTS = "/etc/kubernetes/manifests"  # kubelet's staticPodPath on kubeadm nodes
CRICTL = "timeout 8 crictl --timeout 3s"  # a frozen runtime makes CRI calls hang: each carries its own timeout


def manifest(process: str) -> str:
    """Where kubelet reads the static pod of `process` from (kube-apiserver → .../kube-apiserver.yaml)."""
    return f"{MANIFESTS}/{process}.yaml"


def comm(process: str) -> str:
    """The kernel keeps 15 characters of a process name: pgrep/pkill -x must match that (kube-controller)."""
    return process[:15]


def pid_command(process: str) -> str:
    """A shell line setting $pid to the first process named `process`; it fails when there is none."""
    return f'pid=$(pgrep -x {comm(process)} | head -n1) && [ -n "$pid" ]'


def thaw_command(process: str) -> str:
    """A shell line that continues every stopped `process` and its children (a child forked as SIGSTOP came is stopped
    under its own name once it has exec'd: kube-proxy then waits on a stopped iptables-save for good), and fails while
    any of them is still stopped, so that the dead-man switch tries again."""
    name = comm(process)
    each = f'for p in $(pgrep -x {name}); do for q in "$p" $(pgrep -P "$p"); do'
    return (
        f'pkill -CONT -x {name}; for p in $(pgrep -x {name}); do pkill -CONT -P "$p"; done;'
        f' stopped=0; {each} case "$(ps -o stat= -p "$q" 2>/dev/null)" in T*) stopped=1;; esac; done; done;'
        " [ $stopped -eq 0 ]"
    )


def leader_lease(name: str) -> str:
    """The kube-system Lease a leader-elected component holds and renews while it leads."""
    return f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{name}"


def local_url(port: int, path: str, scheme: str = "https") -> str:
    """An endpoint of a component as asked from inside its own node."""
    return f"{scheme}://127.0.0.1:{port}{path}"


def flags_of(text: str) -> dict[str, str]:
    """`--name=value` flags of a command line or a static-pod manifest."""
    return {m.group(1): m.group(2) for m in re.finditer(r"(--[\w-]+)=([^\s\"']*)", text)}
