"""kube-proxy faults: frozen (new endpoints are not programmed into the node's rules), Service rules flushed on
one node, rule syncs made slow everywhere."""

from __future__ import annotations

import json
import shlex

from pydantic import BaseModel, Field

from chaoskit.cluster.proxymode import PROXY_MODE_URL, kube_proxy_pods, proxies_ready
from chaoskit.faults.base import Env, Fault, FaultParams, FaultPlan, kubectl, node_sh, params_of, register, sh
from chaoskit.faults.certs import CA_CRT
from chaoskit.faults.control_plane import PARKED, ProcessFrozen
from chaoskit.faults.sync_delay import NAMESPACE as PROBE_NAMESPACE
from chaoskit.faults.sync_delay import SERVICE as PROBE_SERVICE
from chaoskit.faults.sync_delay import SyncDelays, fresh_ip, measure, probe_objects
from chaoskit.model.duration import Duration, parse_duration

HEALTHZ = "http://127.0.0.1:10256/healthz"  # kube-proxy's own health endpoint on the node


def healthz_answers(env: Env, node: str) -> bool:
    done = env.nodes.run(node, ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2", HEALTHZ],
                         check=False)  # fmt: skip
    return done.stdout.strip() == "200"


@register
class KubeProxyFrozen(ProcessFrozen):
    """kube-proxy frozen (SIGSTOP) on one node: endpoint changes are not programmed into its rules.

    Endpoints added or removed meanwhile (an HPA scale-up) get no traffic from that node, or keep getting it,
    until it thaws and resyncs.
    """

    name = "kube-proxy.freeze"
    component = "kube-proxy"
    target_role = "worker"
    process = "kube-proxy"

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return super().took_effect(env, plan) and not healthz_answers(env, plan.node)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return healthz_answers(env, plan.node)


SERVICES_CHAIN = "KUBE-SERVICES"  # iptables nat: every ClusterIP's entry point, for node and pod traffic alike
SERVICE_IPS_MAP = "ip kube-proxy service-ips"  # nftables: the verdict map every ClusterIP is dispatched through
CANARY = "KUBE-PROXY-CANARY"  # iptables mode: kube-proxy recreates all its rules when it finds this chain gone
CANARY_TABLES = ("mangle", "nat", "filter")  # kube-proxy checks mangle first, then waits for the others

# How many Service entries the node's dataplane holds, in whichever mode kube-proxy left its rules.
SERVICE_RULE_COUNT = (
    f"if nft list map {SERVICE_IPS_MAP} >/dev/null 2>&1;"
    f" then nft list map {SERVICE_IPS_MAP} | grep -o ': goto' | wc -l;"
    f" else iptables -t nat -S {SERVICES_CHAIN} | grep -c '^-A '; fi"
)


def kubernetes_cluster_ip(env: Env) -> str:
    return str(env.kube.get("/api/v1/namespaces/default/services/kubernetes")["spec"]["clusterIP"])


def cluster_ip_serves_api(env: Env, node: str) -> bool:
    """Whether the `kubernetes` Service's ClusterIP, dialled from `node`, reaches the real API server.

    The CA is verified: without kube-proxy's DNAT the packets leave by the default route, where something else
    may answer.
    """
    ip = kubernetes_cluster_ip(env)
    done = node_sh(env, node, f"curl -sS --max-time 3 --cacert {CA_CRT} https://{ip}:443/readyz 2>&1")
    return done.stdout.strip() == "ok"


def service_rules(env: Env, node: str) -> int | None:
    """Service entries in the node's rules (iptables KUBE-SERVICES rules or nftables service-ips elements)."""
    done = node_sh(env, node, SERVICE_RULE_COUNT)
    try:
        return int(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


@register
class KubeProxyFlushRules(Fault):
    """kube-proxy's Service rules flushed on one node: no ClusterIP answers from there until kube-proxy resyncs.

    Neither the node's own processes nor its pods reach any Service, while the rest of the cluster is fine. Works
    in both modes, picked from kube-proxy's own /proxyMode: iptables flushes the nat KUBE-SERVICES chain, nftables
    the `service-ips` verdict map of the `kube-proxy` table. kube-proxy does not notice either by itself: in v1.34
    its periodic check (iptables, every syncPeriod) only looks for its KUBE-PROXY-CANARY chains, and nftables
    partial syncs only touch the Services that changed, so the rules come back at the hourly full resync (or, in
    iptables mode, at any Service change). The revert therefore does what an operator would: in iptables mode it
    deletes the canary chains, as a firewall reload does, and kube-proxy re-writes everything within syncPeriod;
    in nftables mode, where no such check exists, it restarts kube-proxy (its container comes back at once and
    starts with a full sync). Effect: no Service entries left and the `kubernetes` Service's ClusterIP no longer
    reaches the API server from the node; recovery: both back.
    """

    name = "kube-proxy.flush-rules"
    component = "kube-proxy"
    target_role = "worker"
    effect_timeout = 30.0
    recovery_timeout = 90.0  # syncPeriod (30 s) plus kube-proxy's 5 s wait for the other canaries

    def plan(self, node: str, params: BaseModel) -> FaultPlan:
        delete_canaries = " && ".join(
            f"if iptables -t {t} -S {CANARY} >/dev/null 2>&1; then iptables -w 5 -t {t} -X {CANARY}; fi"
            for t in CANARY_TABLES
        )
        restart_if_flushed = (
            f"if nft list map {SERVICE_IPS_MAP} >/dev/null 2>&1 && ! nft list map {SERVICE_IPS_MAP} | grep -q ': goto';"
            " then pkill -x kube-proxy; fi"
        )  # the `kubernetes` Service always has an entry: an empty map is our flush
        flush = (
            f'mode=$(curl -s --max-time 3 {PROXY_MODE_URL}); case "$mode" in'
            f" iptables) {sh('iptables', '-w', '5', '-t', 'nat', '-F', SERVICES_CHAIN)};;"
            f" nftables) nft flush map {SERVICE_IPS_MAP};;"
            f" *) echo \"kube-proxy on {node} runs in mode '$mode': flush-rules knows iptables and nftables\" >&2;"
            " exit 1;; esac"
        )
        return FaultPlan(
            self.name,
            node,
            apply=(flush,),
            revert=(delete_canaries, restart_if_flushed),
            summary=f"flush kube-proxy's Service rules on {node} (iptables KUBE-SERVICES or nftables service-ips)",
            params=params,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return service_rules(env, plan.node) == 0 and not cluster_ip_serves_api(env, plan.node)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return bool(service_rules(env, plan.node)) and cluster_ip_serves_api(env, plan.node)


class SlowSyncParams(FaultParams):
    min_sync_period: Duration = Field(
        default=30.0,
        ge=5.0,
        le=120.0,
        description="kube-proxy's minSyncPeriod while the fault holds (kind's is 1s): at least this long between the "
        "end of one rule sync and the start of the next. At least 5s, so that the effect (a change waiting half of it) "
        "cannot be kind's own 1s; at most 2m, so that the effect shows within the effect timeout.",
    )


SLOW_FRACTION = 0.5  # a change landing right after a sync must wait at least this part of the period


PROXY_CONFIGMAP_BACKUP = f"{PARKED}/kube-proxy-configmap.yaml"
DEFAULT_SYNC_PERIOD = 30.0  # kube-proxy's, when the ConfigMap says 0s


def go_duration(seconds: float) -> str:
    return f"{seconds:g}s" if seconds == int(seconds) else f"{round(seconds * 1000)}ms"


def slow_sync_sed(min_sync_period: float) -> str:
    """A sed command that sets every proxy mode's minSyncPeriod in the ConfigMap's YAML, and syncPeriod too where
    its default (30 s) would be the shorter of the two."""
    period = go_duration(min_sync_period)
    edits = [f"-e 's/^\\( *\\)minSyncPeriod: .*$/\\1minSyncPeriod: {period}/'"]
    if min_sync_period > DEFAULT_SYNC_PERIOD:
        edits.append(f"-e 's/^\\( *\\)syncPeriod: .*$/\\1syncPeriod: {period}/'")
    return "sed " + " ".join(edits)


PROXY_RESTART_WAIT_S = 90  # the DaemonSet recreates each pod after the old one let go of its ports


def _every_proxy_left(period: str) -> str:
    """A shell test, run on the control-plane node: within PROXY_RESTART_WAIT_S every node's kube-proxy answers
    /configz (metrics are bound to all addresses) with a minSyncPeriod other than `period`."""
    ips = kubectl("get", "nodes", "-o", 'jsonpath={.items[*].status.addresses[?(@.type=="InternalIP")].address}')
    slow = shlex.quote(f'"MinSyncPeriod":"{period}"')
    return (
        f"ips=$({ips}) && end=$(( $(date +%s) + {PROXY_RESTART_WAIT_S} )) && while :; do left=0;"
        f' for ip in $ips; do c=$(curl -s --max-time 2 "http://$ip:10249/configz") &&'
        f""" ! printf '%s' "$c" | grep -q {slow} || left=1; done;"""
        ' [ $left -eq 0 ] && break; [ "$(date +%s)" -ge "$end" ] && break; sleep 1; done; [ $left -eq 0 ]'
    )


def running_min_sync_period(env: Env, node: str) -> float | None:
    """The minSyncPeriod the kube-proxy on `node` runs with, from its /configz (asked on the node itself)."""
    done = node_sh(env, node, "curl -s --max-time 3 http://127.0.0.1:10249/configz")
    try:
        return parse_duration(json.loads(done.stdout)["kubeproxy.config.k8s.io"]["MinSyncPeriod"])
    except (ValueError, KeyError, TypeError):
        return None


@register
class KubeProxySlowSync(Fault):
    """kube-proxy's rule syncs made slow on every node: endpoint changes reach the rules up to minSyncPeriod late.

    An HPA scale-up's new pods get no traffic for a while, removed ones keep getting it. The kube-system/kube-proxy
    ConfigMap's minSyncPeriod (every proxy mode's) is raised to `min_sync_period` (syncPeriod too, where its 30 s
    default would be shorter) and the kube-proxy pods are restarted to read it. In v1.34 kube-proxy then leaves at
    least that period between the end of one sync and the start of the next (no burst): a change arriving meanwhile
    waits, so the gap between an EndpointSlice's last-change-trigger-time and the rules,
    `kubeproxy_network_programming_duration_seconds`, grows up to the period. The original ConfigMap is kept in
    /etc/kubernetes/chaoskit-parked/ on the control-plane node (where kubectl runs); the revert restores it and
    restarts the pods again. Effect, measured: once every kube-proxy pod is Ready, a probe Service of chaoskit's
    (kube-system/chaoskit-slow-sync-probe: no selector, its EndpointSlice holds documentation addresses nobody
    answers at, created and deleted with the fault) gets endpoint changes, and every node's rules are read in the node
    every 100 ms. kube-proxy syncs a change at once when it is idle, so the next change is made right after each node
    programmed the previous one: it lands in that sync's cool-down. The effect holds when on every node such a change
    waited at least half of `min_sync_period` (the first change counts too where kube-proxy's own metrics say it had
    already synced); a change programmed sooner on any node means no effect. Two changes and about half the period,
    typically; at most 1.5 periods. Not in IPVS mode, whose rules the probe does not read. Recovery: every kube-proxy
    runs with another period again (its /configz).
    """

    name = "kube-proxy.slow-sync"
    component = "kube-proxy"
    target_role = "control-plane"
    Params = SlowSyncParams
    effect_timeout = 300.0  # the pods' restart (each waits for the old one to let go of its ports), then 1.5 periods
    recovery_timeout = 120.0

    def __init__(self) -> None:
        self.measured: list[SyncDelays] = []  # every effect measurement, for the report and the tests

    def plan(self, node: str, params: BaseModel) -> FaultPlan:
        p = params_of(params, SlowSyncParams)
        period = go_duration(p.min_sync_period)
        get_cm = kubectl("-n", "kube-system", "get", "configmap", "kube-proxy", "-o", "yaml")
        restart = kubectl("-n", "kube-system", "delete", "pod", "-l", "k8s-app=kube-proxy", "--wait=false")
        backup = PROXY_CONFIGMAP_BACKUP
        probe = json.dumps({"apiVersion": "v1", "kind": "List", "items": probe_objects(fresh_ip([]))},
                           separators=(",", ":"))  # fmt: skip
        return FaultPlan(
            self.name,
            node,
            apply=(
                f"if [ -e {backup} ]; then echo '{backup} exists: an earlier injection was not reverted"
                " (chaoskit revert)' >&2; exit 1; fi",
                f"printf '%s\\n' {shlex.quote(probe)} | {kubectl('apply', '-f', '-')}",
                sh("mkdir", "-p", PARKED),
                f"{get_cm} > {backup}.new && mv {backup}.new {backup}",
                f"{slow_sync_sed(p.min_sync_period)} {backup} | {kubectl('replace', '-f', '-')}",
                restart,
            ),
            revert=(
                # resourceVersion dropped: the backup replaces whatever the ConfigMap became meanwhile
                f"if [ -f {backup} ]; then sed '/^  resourceVersion: /d' {backup} | {kubectl('replace', '-f', '-')}"
                f" && {restart}; fi",
                # the backup goes only once every kube-proxy runs another period: a pod restarted while its kubelet's
                # ConfigMap cache was stale (an API server that just came back) starts slow again, and a failed
                # line makes the switch retry the whole revert
                f"if [ -f {backup} ]; then {_every_proxy_left(period)} && rm -f {backup}; fi",
                kubectl("-n", PROBE_NAMESPACE, "delete", "service,endpointslice", PROBE_SERVICE, "--ignore-not-found"),
            ),
            summary=f"set kube-proxy's minSyncPeriod to {period} in kube-system/kube-proxy and restart kube-proxy",
            params=p,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        period = plan.params_as(SlowSyncParams).min_sync_period
        if not proxies_ready(env.kube):
            return False
        _, pods = kube_proxy_pods(env.kube)
        found = measure(env, [p["spec"]["nodeName"] for p in pods], SLOW_FRACTION * period, 1.5 * period + 10)
        self.measured.append(found)
        return found.slow_everywhere

    def _periods(self, env: Env) -> list[float | None] | None:
        """Each live kube-proxy's minSyncPeriod, or None while the DaemonSet is not fully Ready."""
        if not proxies_ready(env.kube):
            return None
        _, pods = kube_proxy_pods(env.kube)
        return [running_min_sync_period(env, p["spec"]["nodeName"]) for p in pods]

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        slow = plan.params_as(SlowSyncParams).min_sync_period
        periods = self._periods(env)
        return periods is not None and all(s is not None and abs(s - slow) >= 1e-3 for s in periods)
