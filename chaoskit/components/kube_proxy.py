"""kube-proxy: everything chaoskit knows about it, in one place.

- where it answers: metrics, /configz and /proxyMode on 10249, /healthz on 10256 (kind-config.yaml binds the metrics
  port to 0.0.0.0; kubeadm's default is the node's loopback, where chaoskit asks from inside the node);
- its configuration: /configz (minSyncPeriod) and the kube-system/kube-proxy ConfigMap;
- its own rule-sync metrics;
- its Service rules in a node, in iptables or nftables mode: shell lines that read them and parsers of what they print;
- its dataplane mode, read and switched at runtime: iptables (kind's default), nftables, or IPVS.

The kube-proxy faults and the rule-sync measurement must hold on every mode, so the mode is switched in place
(kube-system/kube-proxy ConfigMap, then the pods restarted; a new kube-proxy cleans up the other modes' rules)
instead of rebuilding the cluster. IPVS needs the ip_vs kernel module, which a node container cannot load:
where the kernel lacks it the switch is refused with that reason.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
from collections.abc import Callable
from typing import Any, Literal, get_args

from chaoskit import figures
from chaoskit.components.rbac import Identity
from chaoskit.errors import ToolError
from chaoskit.model.duration import parse_duration
from chaoskit.model.kwok import REAL_NODES_SELECTOR
from chaoskit.seams.kube import Kube, condition
from chaoskit.seams.nodeexec import Node, NodeExec, api_nodes

PROCESS = "kube-proxy"
# whom the API server sees in its requests, and kubeadm's binding of it to system:node-proxier
IDENTITY = Identity(
    "kube-proxy", "kubeadm:node-proxier", "--serviceaccount=kube-system:kube-proxy", "system:node-proxier"
)

# --- where it answers ------------------------------------------------------------------------------------------------
METRICS_PORT = 10249  # /metrics, /configz and /proxyMode
HEALTHZ_PORT = 10256
LOCAL = f"http://127.0.0.1:{METRICS_PORT}"  # asked from inside the node
METRICS_URL = f"{LOCAL}/metrics"
CONFIGZ_URL = f"{LOCAL}/configz"
PROXY_MODE_URL = f"{LOCAL}/proxyMode"  # kube-proxy says which proxier it runs
HEALTHZ = f"http://127.0.0.1:{HEALTHZ_PORT}/healthz"


def healthz_answers(nodes: NodeExec, node: Node) -> bool:
    """kube-proxy's /healthz on `node` says 200 (it runs and synced within its deadline)."""
    done = nodes.run(
        node, ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2", HEALTHZ], check=False
    )
    return done.stdout.strip() == "200"


# --- its configuration -----------------------------------------------------------------------------------------------
CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/kube-proxy"
CONFIG_KEY = "config.conf"
CONFIGZ_SECTION, CONFIGZ_MIN_SYNC = "kubeproxy.config.k8s.io", "MinSyncPeriod"  # /configz's JSON: section, key
DEFAULT_SYNC_PERIOD = 30.0  # kube-proxy's syncPeriod when the ConfigMap says 0s


def min_sync_period(configz: str) -> float | None:
    """The minSyncPeriod (seconds) in a /configz answer; None when it is not one."""
    try:
        return parse_duration(json.loads(configz)[CONFIGZ_SECTION][CONFIGZ_MIN_SYNC])
    except (ValueError, KeyError, TypeError):
        return None


def running_min_sync_period(nodes: NodeExec, node: Node) -> float | None:
    """The minSyncPeriod the kube-proxy on `node` runs with, from its /configz (asked on the node itself)."""
    done = nodes.run(node, ["curl", "-s", "--max-time", "3", CONFIGZ_URL], check=False)
    return min_sync_period(done.stdout)


# --- its metrics -----------------------------------------------------------------------------------------------------
# observed once per EndpointSlice update carrying a last-change-trigger-time, when the sync that programmed it ended
NETWORK_PROGRAMMING = "kubeproxy_network_programming_duration_seconds"
LAST_QUEUED = "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds"  # node clock: a change was queued
LAST_SYNC = "kubeproxy_sync_proxy_rules_last_timestamp_seconds"  # node clock: the last sync finished
SYNC_DURATION = "kubeproxy_sync_proxy_rules_duration_seconds"
FULL_SYNC_DURATION = "kubeproxy_sync_full_proxy_rules_duration_seconds"  # a sync that rewrote every rule
PARTIAL_SYNC_DURATION = "kubeproxy_sync_partial_proxy_rules_duration_seconds"  # one that rewrote the changes only
IPTABLES_RULES = "kubeproxy_sync_proxy_rules_iptables_total"  # per table; the nftables proxier exports no count
ENDPOINT_CHANGES_PENDING = "kubeproxy_sync_proxy_rules_endpoint_changes_pending"
SERVICE_CHANGES_PENDING = "kubeproxy_sync_proxy_rules_service_changes_pending"

# --- its Service rules in a node -------------------------------------------------------------------------------------
Target = tuple[str, str, int]  # (IP, protocol, port): a ClusterIP port, or an endpoint
NFT_TABLE = "nft list table ip kube-proxy"  # nftables mode: the whole table
IPTABLES_NAT = "iptables-save -t nat | grep -E '^-A KUBE-(SERVICES|SVC-|SEP-)'"  # iptables mode: its nat rules
SERVICES_CHAIN = "KUBE-SERVICES"  # iptables nat: every ClusterIP's entry point, for node and pod traffic alike
SERVICE_IPS_MAP = "ip kube-proxy service-ips"  # nftables: the verdict map every ClusterIP is dispatched through
CANARY = "KUBE-PROXY-CANARY"  # iptables mode: kube-proxy recreates all its rules when it finds this chain gone
CANARY_TABLES = ("mangle", "nat", "filter")  # kube-proxy checks mangle first, then waits for the others


def service_rule_count(namespace: str = "") -> str:
    """A shell line printing how many Service entries the node's dataplane holds, in whichever mode kube-proxy left
    its rules; with `namespace`, only that namespace's (each entry names its Service: the iptables rule in its
    comment, the nftables map element in the chain it jumps to)."""
    nft = f"grep -o ': goto service-[A-Z0-9]*-{namespace}/'" if namespace else "grep -o ': goto'"
    ipt = f"grep -cE -- '--comment \"?{namespace}/'" if namespace else "grep -c '^-A '"
    return (
        f"if nft list map {SERVICE_IPS_MAP} >/dev/null 2>&1;"
        f" then nft list map {SERVICE_IPS_MAP} | {nft} | wc -l;"
        f" else iptables -t nat -S {SERVICES_CHAIN} | {ipt}; fi"
    )


def service_rules(nodes: NodeExec, node: Node, namespace: str = "") -> int | None:
    """Service entries in the node's rules (iptables KUBE-SERVICES rules or nftables service-ips elements), all or
    one namespace's."""
    done = nodes.run(node, ["sh", "-c", service_rule_count(namespace)], check=False, timeout=30)
    try:
        return int(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def fewest_service_rules(nodes: NodeExec, node: Node, looks: int, every: float) -> int | None:
    """The fewest Service entries among `looks` reads of the node's rules `every` seconds apart, in one round-trip:
    rules that something keeps removing show as gone in one of them, however soon kube-proxy writes them back."""
    loop = f"for i in $(seq {looks}); do {{ {service_rule_count()}; }}; sleep {every:g}; done"
    done = nodes.run(node, ["sh", "-c", loop], check=False, timeout=30)
    counts = [int(word) for word in done.stdout.split() if word.isdigit()]
    return min(counts) if len(counts) == looks else None


def _hash(text: str, length: int) -> str:
    # as kube-proxy names its chains: base32 of the SHA-256, cut
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode()[:length]


def iptables_service_chain(namespace: str, service: str, port_name: str, protocol: str = "TCP") -> str:
    """The iptables nat chain kube-proxy balances one Service port's cluster traffic in (KUBE-SVC-<hash>)."""
    port_part = f":{port_name}" if port_name else ""
    return "KUBE-SVC-" + _hash(f"{namespace}/{service}{port_part}{protocol.lower()}", 16)


def nft_service_chain(namespace: str, service: str, port_name: str, protocol: str = "TCP") -> str:
    """The nftables chain of one Service port's cluster traffic (service-<hash>-<ns>/<svc>/<proto>/<port>)."""
    base = f"{namespace}/{service}/{protocol.lower()}/{port_name}"
    return f"service-{_hash(base, 8)}-{base}"


def endpoint_ips_command(namespace: str, service: str, port_name: str, protocol: str = "TCP") -> str:
    """A shell line printing the endpoint IPs one Service port's rules in the node lead to, one a line, in either
    mode. It lists that Service's own chain only: a whole table of 10,000 Services takes ~1 s to print and would
    make the probe, which reads it ten times a second, the busiest process on the node."""
    ns_svc = f"{namespace}/{service}"
    # nftables: the service chain's `goto endpoint-<hash>-<ns>/<svc>/<proto>/<port>__<ip>/<port>` verdicts
    nft = (
        f"nft list chain ip kube-proxy {nft_service_chain(namespace, service, port_name, protocol)} 2>/dev/null"
        f" | grep -o 'goto endpoint-[A-Z0-9]*-{ns_svc}/[a-z]*/[a-z0-9-]*__[0-9.]*' | sed 's/.*__//'"
    )
    # iptables: the endpoint chains the service chain jumps to, and each one's DNAT target. Not the jumps' comments:
    # past 1,000 endpoints in the cluster kube-proxy drops them to sync faster (its "large cluster mode")
    ipt = (
        f"for c in $(iptables -t nat -S {iptables_service_chain(namespace, service, port_name, protocol)} 2>/dev/null"
        " | sed -n 's/.* -j \\(KUBE-SEP-[A-Z0-9]*\\).*/\\1/p'); do"
        " iptables -t nat -S $c 2>/dev/null | sed -n 's/.* --to-destination \\([0-9.]*\\):.*/\\1/p'; done"
    )
    # each mode's read of the other's chain fails at once: no mode check is needed
    return f"{{ {nft}; {ipt}; }}"


def endpoint_ips(nodes: NodeExec, node: Node, namespace: str, service: str, port_name: str) -> list[str]:
    """The endpoint IPs `node`'s rules lead one Service port to now: a pod Ready in the API is among them only once
    that node's kube-proxy has synced it (a few hundred ms when idle, seconds on a busy node)."""
    read = endpoint_ips_command(namespace, service, port_name)
    return nodes.run(node, ["sh", "-c", read], check=False, timeout=30).stdout.split()


_NFT_SERVICE = re.compile(r"([\d.]+) \. (tcp|udp|sctp) \. (\d+) : goto service-")
_NFT_ENDPOINT = re.compile(r"goto endpoint-\S+?/(tcp|udp|sctp)/[^/\s]*__([\d.]+)/(\d+)\b")


def nft_rules(table: str) -> tuple[set[Target], set[Target]]:
    """From `nft list table ip kube-proxy`: the ClusterIP entries of the service-ips map, and the endpoints the
    service chains jump to."""
    start = table.find("map service-ips {")
    block = table[start : table.find("\n\t}", start)] if start >= 0 else ""
    services = {(ip, proto, int(port)) for ip, proto, port in _NFT_SERVICE.findall(block)}
    endpoints = {(ip, proto, int(port)) for proto, ip, port in _NFT_ENDPOINT.findall(table)}
    return services, endpoints


_IPT_SERVICE = re.compile(r"^-A KUBE-SERVICES -d ([\d.]+)/32 -p (\w+) .*--dport (\d+) .*-j KUBE-SVC-", re.M)
_IPT_JUMP = re.compile(r"^-A KUBE-SVC-\S+ .*-j (KUBE-SEP-\S+)", re.M)
_IPT_DNAT = re.compile(r"^-A (KUBE-SEP-\S+) -p (\w+) .*--to-destination ([\d.]+):(\d+)", re.M)


def iptables_rules(nat: str) -> tuple[set[Target], set[Target]]:
    """From its nat rules (IPTABLES_NAT): the ClusterIP entries, and the endpoints some Service chain jumps to."""
    services = {(ip, proto, int(port)) for ip, proto, port in _IPT_SERVICE.findall(nat)}
    referenced = set(_IPT_JUMP.findall(nat))
    endpoints = {(ip, proto, int(port)) for chain, proto, ip, port in _IPT_DNAT.findall(nat) if chain in referenced}
    return services, endpoints


# --- its pods and dataplane mode -------------------------------------------------------------------------------------
ProxyMode = Literal["iptables", "nftables", "ipvs"]
PROXY_MODES: tuple[str, ...] = get_args(ProxyMode)
PODS = "/api/v1/namespaces/kube-system/pods"
DAEMONSET = "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy"
POD_SELECTOR = "k8s-app=kube-proxy"
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


def running_mode(nodes: NodeExec, node: Node) -> str:
    """The proxier the kube-proxy on `node` runs, from its own endpoint ('' if it does not answer)."""
    done = nodes.run(node, ["curl", "-s", "--max-time", "3", PROXY_MODE_URL], check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def ipvs_unsupported(nodes: NodeExec, node: Node) -> str | None:
    """Why IPVS cannot run on `node`, or None when the kernel has ip_vs."""
    probe = "test -e /proc/net/ip_vs || test -d /sys/module/ip_vs || modprobe ip_vs 2>/dev/null"
    if nodes.run(node, ["sh", "-c", probe], check=False).returncode == 0:
        return None
    kernel = nodes.run(node, ["uname", "-r"], check=False).stdout.strip() or "unknown"
    return (
        f"IPVS mode needs the ip_vs kernel module, and this host's kernel ({kernel}) has none: no /proc/net/ip_vs,"
        " no /sys/module/ip_vs, `modprobe ip_vs` fails; a node container cannot load kernel modules"
    )


def proxied_nodes(kube: Kube) -> list[Node]:
    """The nodes kube-proxy runs on, by name: every node but the simulated ones (kwok's, which run nothing)."""
    return api_nodes(kube.get("/api/v1/nodes", labelSelector=REAL_NODES_SELECTOR)["items"])


def kube_proxy_pods(kube: Kube) -> tuple[int, list[dict[str, Any]]]:
    """(pods the DaemonSet wants, its live pods: not being deleted)."""
    ds = kube.get(DAEMONSET)
    pods = kube.get(PODS, labelSelector=POD_SELECTOR)["items"]
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
    proxied = proxied_nodes(kube)
    if mode == "ipvs":
        for node in proxied:
            reason = ipvs_unsupported(nodes, node)
            if reason:
                raise ProxyModeUnsupported(reason)
    if configured_mode(kube) == mode and all(running_mode(nodes, n) == mode for n in proxied):
        return False
    cm = kube.get(CONFIGMAP)
    kube.patch(CONFIGMAP, {"data": {CONFIG_KEY: with_mode(cm["data"][CONFIG_KEY], mode)}})
    for pod in kube.get(PODS, labelSelector=POD_SELECTOR)["items"]:
        kube.delete(f"{PODS}/{pod['metadata']['name']}", propagation="Background")
    say(f"kube-proxy switching to {mode} mode on {len(proxied)} nodes")
    start = time.monotonic()
    kube.wait(
        f"every kube-proxy to run in {mode} mode",
        lambda: proxies_ready(kube) and all(running_mode(nodes, n) == mode for n in proxied),
        timeout,
    )
    say(f"kube-proxy runs in {mode} mode on every node ({figures.seconds(time.monotonic() - start)})")
    return True
