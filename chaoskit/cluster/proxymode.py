"""kube-proxy's dataplane mode, read and switched at runtime: iptables (kind's default), nftables, or IPVS.

The kube-proxy faults and the rule-sync measurement must hold on every mode, so the mode is switched in place
(kube-system/kube-proxy ConfigMap, then the pods restarted; a new kube-proxy cleans up the other modes' rules)
instead of rebuilding the cluster. IPVS needs the ip_vs kernel module, which a node container cannot load:
where the kernel lacks it the switch is refused with that reason.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, Literal, get_args

from chaoskit.cluster.kube import Kube, condition
from chaoskit.cluster.nodeexec import NodeExec
from chaoskit.errors import ToolError

ProxyMode = Literal["iptables", "nftables", "ipvs"]
PROXY_MODES: tuple[str, ...] = get_args(ProxyMode)
CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/kube-proxy"
CONFIG_KEY = "config.conf"
PODS = "/api/v1/namespaces/kube-system/pods"
PROXY_MODE_URL = "http://127.0.0.1:10249/proxyMode"  # kube-proxy says which proxier it runs, on its metrics port
MODE_LINE = re.compile(r"^mode:.*$", re.MULTILINE)


class ProxyModeUnsupported(ToolError):
    pass


def configured_mode(kube: Kube) -> str:
    """The mode the ConfigMap asks for; an empty mode means iptables on Linux."""
    conf = kube.get(CONFIGMAP)["data"][CONFIG_KEY]
    found = MODE_LINE.search(conf)
    value = found.group(0).split(":", 1)[1].strip().strip("\"'") if found else ""
    return value or "iptables"


def with_mode(conf: str, mode: str) -> str:
    """The KubeProxyConfiguration text with its top-level mode set (appended when absent)."""
    if MODE_LINE.search(conf):
        return MODE_LINE.sub(f"mode: {mode}", conf, count=1)
    return conf.rstrip("\n") + f"\nmode: {mode}\n"


def running_mode(nodes: NodeExec, node: str) -> str:
    """The proxier the kube-proxy on `node` runs, from its own endpoint ('' if it does not answer)."""
    done = nodes.run(node, ["curl", "-s", "--max-time", "3", PROXY_MODE_URL], check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def ipvs_unsupported(nodes: NodeExec, node: str) -> str | None:
    """Why IPVS cannot run on `node`, or None when the kernel has ip_vs."""
    probe = "test -e /proc/net/ip_vs || test -d /sys/module/ip_vs || modprobe ip_vs 2>/dev/null"
    if nodes.run(node, ["sh", "-c", probe], check=False).returncode == 0:
        return None
    kernel = nodes.run(node, ["uname", "-r"], check=False).stdout.strip() or "unknown"
    return (
        f"IPVS mode needs the ip_vs kernel module, and this host's kernel ({kernel}) has none: no /proc/net/ip_vs,"
        " no /sys/module/ip_vs, `modprobe ip_vs` fails; a node container cannot load kernel modules"
    )


def node_names(kube: Kube) -> list[str]:
    return sorted(n["metadata"]["name"] for n in kube.get("/api/v1/nodes")["items"])


def kube_proxy_pods(kube: Kube) -> tuple[int, list[dict[str, Any]]]:
    """(pods the DaemonSet wants, its live pods: not being deleted)."""
    ds = kube.get("/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy")
    pods = kube.get(PODS, labelSelector="k8s-app=kube-proxy")["items"]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    return int(ds.get("status", {}).get("desiredNumberScheduled", 0)), live


def proxies_ready(kube: Kube) -> bool:
    want, live = kube_proxy_pods(kube)
    return want > 0 and len(live) == want and all(condition(p, "Ready") for p in live)


def set_mode(
    kube: Kube, nodes: NodeExec, mode: str, timeout: float = 180.0, say: Callable[[str], None] = lambda _: None
) -> bool:
    """Switch every kube-proxy to `mode` and wait until each one runs it; False when it already did."""
    if mode not in PROXY_MODES:
        raise ProxyModeUnsupported(f"unknown kube-proxy mode {mode!r}; one of {', '.join(PROXY_MODES)}")
    names = node_names(kube)
    if mode == "ipvs":
        for name in names:
            reason = ipvs_unsupported(nodes, name)
            if reason:
                raise ProxyModeUnsupported(reason)
    if configured_mode(kube) == mode and all(running_mode(nodes, n) == mode for n in names):
        return False
    cm = kube.get(CONFIGMAP)
    kube.patch(CONFIGMAP, {"data": {CONFIG_KEY: with_mode(cm["data"][CONFIG_KEY], mode)}})
    for pod in kube.get(PODS, labelSelector="k8s-app=kube-proxy")["items"]:
        kube.delete(f"{PODS}/{pod['metadata']['name']}", propagation="Background")
    say(f"kube-proxy switching to {mode} mode on {len(names)} nodes")
    start = time.monotonic()
    kube.wait(
        f"every kube-proxy to run in {mode} mode",
        lambda: proxies_ready(kube) and all(running_mode(nodes, n) == mode for n in names),
        timeout,
    )
    say(f"kube-proxy runs in {mode} mode on every node ({time.monotonic() - start:.1f}s)")
    return True
