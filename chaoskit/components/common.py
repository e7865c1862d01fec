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


def continue_command(process: str) -> str:
    """A shell line that continues every stopped `process` and its children (a child forked as SIGSTOP came is stopped
    under its own name once it has exec'd: kube-proxy then waits on a stopped iptables-save for good); what it
    achieved is for `thawed_check` to say."""
    name = comm(process)
    return f'pkill -CONT -x {name}; for p in $(pgrep -x {name}); do pkill -CONT -P "$p"; done; true'


def thawed_check(process: str) -> str:
    """A shell line failing while any `process` or child of one is stopped, and when pgrep or ps cannot say (pgrep
    exits 1 for none, ps 1 for a process gone meanwhile; anything else is an error), so that the dead-man switch
    tries again."""
    name = comm(process)
    kids = 'k=$(pgrep -P "$p"); [ $? -le 1 ] || err=1'
    state = 's=$(ps -o stat= -p "$q"); r=$?; case "$r:$s" in 0:T*) stopped=1;; 0:*|1:) ;; *) err=1;; esac'
    return (
        f"stopped=0; err=0; if pids=$(pgrep -x {name}) || [ $? -eq 1 ]; then"
        f' for p in $pids; do {kids}; for q in "$p" $k; do {state}; done; done; else err=1; fi;'
        f" [ $err -eq 0 ] || echo 'pgrep or ps could not say whether {name} is stopped' >&2;"
        f" [ $stopped -eq 0 ] || echo '{name} or a child of it is still stopped' >&2;"
        " [ $err -eq 0 ] && [ $stopped -eq 0 ]"
    )


def thaw_command(process: str) -> str:
    """A shell line that continues every stopped `process` and its children, and fails while any of them is still
    stopped or pgrep/ps cannot say."""
    return f"{continue_command(process)}; {thawed_check(process)}"


def leader_lease(name: str) -> str:
    """The kube-system Lease a leader-elected component holds and renews while it leads."""
    return f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{name}"


def local_url(port: int, path: str, scheme: str = "https") -> str:
    """An endpoint of a component as asked from inside its own node."""
    return f"{scheme}://127.0.0.1:{port}{path}"


def flags_of(text: str) -> dict[str, str]:
    """`--name=value` flags of a command line or a static-pod manifest."""
    return {m.group(1): m.group(2) for m in re.finditer(r"(--[\w-]+)=([^\s\"']*)", text)}
