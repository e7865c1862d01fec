"""kube-proxy faults: frozen (new endpoints are not programmed into the node's rules), Service rules flushed on
one node, rule syncs made slow everywhere."""

# Over 300 lines: kube-proxy's three faults and the probe Service their checks share.

from __future__ import annotations

import json
import shlex
import time

from pydantic import BaseModel, Field

from chaoskit.components import kube_proxy as kp
from chaoskit.env import Env
from chaoskit.faults.base import (
    Fault,
    FaultPlan,
    Named,
    NoOpControl,
    absent,
    every,
    kubectl,
    listed_nowhere,
    node_sh,
    register,
    sh,
    unit_inactive,
    within,
)
from chaoskit.faults.control_plane import PARKED, ProcessFrozen
from chaoskit.measurements.rule_sync_delay import NAMESPACE as PROBE_NAMESPACE
from chaoskit.measurements.rule_sync_delay import (
    PORT_NAME,
    SERVICE_PATH,
    SLICE_PATH,
    SyncDelays,
    endpoint,
    fresh_ip,
    measure,
    probe_objects,
)
from chaoskit.measurements.rule_sync_delay import SERVICE as PROBE_SERVICE
from chaoskit.model.duration import Duration
from chaoskit.model.kwok import REAL_NODES_SELECTOR
from chaoskit.model.params import FaultParams, params_of
from chaoskit.seams.certs import CA_CRT
from chaoskit.seams.nodeexec import VERIFY_TRIES, Node

# A running kube-proxy programs an endpoint change within its minSyncPeriod (1 s on kind) plus one sync (well under a
# second at this size); a node whose rules have not taken one up after this long does not follow the cluster.
FOLLOW_S = 4.0


def rules_probe_name(node: str) -> str:
    """The probe Service whose endpoints chaoskit changes to see whether `node`'s rules follow: one per node, so
    freezes on two nodes at once never share one."""
    return f"chaoskit-rules-{node}"[:63].rstrip("-")


def rules_follow(env: Env, node: Node, wait: float = FOLLOW_S) -> bool:
    """Whether `node`'s Service rules take up a fresh endpoint of chaoskit's probe Service within `wait` seconds.

    The probe (kube-system, no selector, its EndpointSlice written here with documentation addresses nobody answers
    at) is made on first use; `forget_rules_probe` deletes it."""
    name = rules_probe_name(node.name)
    slice_path = f"/apis/discovery.k8s.io/v1/namespaces/{PROBE_NAMESPACE}/endpointslices/{name}"
    found = env.kube.find(slice_path)
    taken = [ip for ep in (found or {}).get("endpoints") or [] for ip in ep.get("addresses", [])]
    # an address neither the slice nor the node's rules hold: one the rules held before would "follow" at once
    ip = fresh_ip([*taken, *kp.endpoint_ips(env.nodes, node, PROBE_NAMESPACE, name, PORT_NAME)])
    if found is None:
        for obj in probe_objects(ip, name, KubeProxyFrozen.name):
            env.kube.apply(obj)
    else:
        env.kube.patch(slice_path, {"endpoints": [endpoint(ip)]})
    deadline = time.monotonic() + wait
    while True:
        if ip in kp.endpoint_ips(env.nodes, node, PROBE_NAMESPACE, name, PORT_NAME):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def forget_rules_probe(env: Env, node: Node) -> None:
    name = rules_probe_name(node.name)
    env.kube.delete(f"/api/v1/namespaces/{PROBE_NAMESPACE}/services/{name}", propagation="Background")
    env.kube.delete(
        f"/apis/discovery.k8s.io/v1/namespaces/{PROBE_NAMESPACE}/endpointslices/{name}", propagation="Background"
    )


@register
class KubeProxyFrozen(ProcessFrozen):
    """kube-proxy frozen (SIGSTOP) on one node: endpoint changes are not programmed into its rules.

    Endpoints added or removed meanwhile (an HPA scale-up) get no traffic from that node, or keep getting it,
    until it thaws and resyncs. Effect: the node's rules do not take up an endpoint change of a probe Service of
    chaoskit's (kube-system/chaoskit-rules-<node>, no selector, its EndpointSlice written by chaoskit) within 4 s;
    recovery: they do again (the probe is then deleted). The revert continues every stopped kube-proxy and its
    children, and fails while one is still stopped.
    """

    name = "kube-proxy.freeze"
    component = "kube-proxy"
    named = Named("kube-proxy", r"stopped|unhealthy|not synced")
    no_op = NoOpControl(wait=15.0)  # an endpoint change a frozen kube-proxy misses counts after 4 s
    scope = "node"
    target_role = "worker"
    process = kp.PROCESS

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return not rules_follow(env, plan.node)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        if not rules_follow(env, plan.node):
            return False
        forget_rules_probe(env, plan.node)
        return True


def kubernetes_cluster_ip(env: Env) -> str:
    return str(env.kube.get("/api/v1/namespaces/default/services/kubernetes")["spec"]["clusterIP"])


def cluster_ip_serves_api(env: Env, node: Node) -> bool:
    """Whether the `kubernetes` Service's ClusterIP, dialled from `node`, reaches the real API server.

    The CA is verified: without kube-proxy's DNAT the packets leave by the default route, where something else
    may answer.
    """
    ip = kubernetes_cluster_ip(env)
    done = node_sh(env, node, f"curl -sS --max-time 3 --cacert {CA_CRT} https://{ip}:443/readyz 2>&1")
    return done.stdout.strip() == "ok"


FLUSH_UNIT = "chaoskit-flush-rules"
FLUSH_UNIT_PROPERTIES = ("--description=chaoskit kube-proxy.flush-rules", "--property=KillMode=control-group")
REFLUSH_S = 0.5  # how often the unit flushes again; kube-proxy syncs at most once a second (kind's minSyncPeriod)


# What shows the Service rules back, or bound to come back, read from listings the tools gave (their failure is no
# evidence): in nftables mode (kube-proxy's table stands) the service-ips map holds entries again (a restarted
# kube-proxy's full sync); in iptables mode KUBE-SERVICES holds rules again, or no canary chain is left, so
# kube-proxy's next check (every syncPeriod) writes everything again.
CANARY_GONE = (
    "out=$(iptables -w 5 -t mangle -S) &&"
    f" {{ printf '%s\\n' \"$out\" | grep -q -x -e '-N {kp.CANARY}'; [ $? -eq 1 ]; }}"
)
RULES_BACK = (
    "{ t=$(nft list tables) && if printf '%s\\n' \"$t\" | grep -q -x -e 'table ip kube-proxy'; then"
    f" nft list map {kp.SERVICE_IPS_MAP} | grep -q ': goto'; else"
    f" iptables -w 5 -t nat -S {kp.SERVICES_CHAIN} | grep -q -e '^-A {kp.SERVICES_CHAIN} '"
    f" || {{ {CANARY_GONE}; }}; fi; }}"
)
RULES_BACK_WAIT_S = 60  # a kube-proxy restarted by the revert comes back and syncs in seconds


@register
class KubeProxyFlushRules(Fault):
    """kube-proxy's Service rules flushed on one node, and kept flushed: no ClusterIP answers from there while it holds.

    Neither the node's own processes nor its pods reach any Service, while the rest of the cluster is fine. Works
    in both modes, picked from kube-proxy's own /proxyMode: iptables flushes the nat KUBE-SERVICES chain, nftables
    the `service-ips` verdict map of the `kube-proxy` table. A systemd unit on the node (`chaoskit-flush-rules`, in
    the node's cgroup so the dead-man switch can stop it) flushes them again every half second, as a misbehaving
    firewall manager would: kube-proxy rewrites KUBE-SERVICES on any endpoint change in the cluster, which would
    otherwise heal a one-off flush within seconds on a busy cluster. kube-proxy does not notice the flush by itself:
    in v1.34 its periodic check (iptables, every syncPeriod) only looks for its KUBE-PROXY-CANARY chains, and
    nftables partial syncs only touch the Services that changed. The revert stops the unit, then does what an
    operator would: in iptables mode it deletes the canary chains, as a firewall reload does, and kube-proxy
    re-writes everything within syncPeriod; in nftables mode, where no such check exists, it restarts kube-proxy (its
    container comes back at once and starts with a full sync). Effect: no Service entries left and the `kubernetes`
    Service's ClusterIP no longer reaches the API server from the node; recovery: both back.
    """

    name = "kube-proxy.flush-rules"
    component = "kube-proxy"
    named = Named("kube-proxy", r"Service rule")
    no_op = NoOpControl(wait=10.0)  # the rules are gone within a second
    scope = "node"  # kept flushed by the unit: endpoint changes elsewhere no longer heal it
    target_role = "worker"
    effect_timeout = 30.0
    recovery_timeout = 90.0  # syncPeriod (30 s) plus kube-proxy's 5 s wait for the other canaries

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        delete_canaries = " && ".join(
            f"if iptables -t {t} -S {kp.CANARY} >/dev/null 2>&1; then iptables -w 5 -t {t} -X {kp.CANARY}; fi"
            for t in kp.CANARY_TABLES
        )
        restart_if_flushed = (
            f"if nft list map {kp.SERVICE_IPS_MAP} >/dev/null 2>&1 && ! nft list map {kp.SERVICE_IPS_MAP} | "
            f"grep -q ': goto'; then pkill -x {kp.PROCESS}; fi"
        )  # the `kubernetes` Service always has an entry: an empty map is our flush
        flush = {
            "iptables": sh("iptables", "-w", "5", "-t", "nat", "-F", kp.SERVICES_CHAIN),
            "nftables": f"nft flush map {kp.SERVICE_IPS_MAP}",
        }
        keep_flushed = {
            mode: sh(
                "systemd-run",
                f"--unit={FLUSH_UNIT}",
                *FLUSH_UNIT_PROPERTIES,
                "sh",
                "-c",
                f"while :; do {line} >/dev/null 2>&1; sleep {REFLUSH_S:g}; done",
            )
            for mode, line in flush.items()
        }
        apply = (
            f'mode=$(curl -s --max-time 3 {kp.PROXY_MODE_URL}); case "$mode" in'
            + "".join(f" {mode}) {flush[mode]} && {keep_flushed[mode]};;" for mode in flush)
            + f" *) echo \"kube-proxy on {node.name} runs in mode '$mode': flush-rules knows iptables and"
            ' nftables" >&2; exit 1;; esac'
        )
        stop_unit = (
            f"systemctl stop {FLUSH_UNIT}.service 2>/dev/null; systemctl reset-failed {FLUSH_UNIT}.service"
            " 2>/dev/null; true"
        )
        return FaultPlan(
            self.name,
            node,
            apply=(apply,),
            undo=(stop_unit, delete_canaries, restart_if_flushed),
            verify=(
                every(
                    unit_inactive(f"{FLUSH_UNIT}.service"),
                    within(
                        RULES_BACK_WAIT_S,
                        RULES_BACK,
                        f"kube-proxy's Service rules on {node.name} are still flushed, or iptables/nft could not say",
                    ),
                ),
            ),
            summary=f"flush kube-proxy's Service rules on {node.name} (iptables KUBE-SERVICES or nftables service-ips)",
            params=params,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return kp.service_rules(env.nodes, plan.node) == 0 and not cluster_ip_serves_api(env, plan.node)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        # while the unit runs, a kube-proxy sync (any endpoint change in the cluster) writes the rules back for up to
        # REFLUSH_S; after each flush they stay gone until kube-proxy's next sync, a second after its last. So rules
        # seen in all of 4 looks REFLUSH_S/2 apart mean no unit flushes them, not one sync caught in between
        rules = kp.fewest_service_rules(env.nodes, plan.node, looks=4, every=REFLUSH_S / 2)
        return bool(rules) and cluster_ip_serves_api(env, plan.node)


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
# Recovered: a change landing right after a sync is programmed within kind's 1 s minSyncPeriod and one sync more;
# one that waits longer is decided slow then, so the check answers within seconds either way
FAST_SYNC_S = 3.0
FAST_WITHIN_S = 12.0  # two changes at kind's period take about 3 s; past this the measurement stops undecided


PROXY_CONFIGMAP_BACKUP = f"{PARKED}/kube-proxy-configmap.yaml"


def go_duration(seconds: float) -> str:
    return f"{seconds:g}s" if seconds == int(seconds) else f"{round(seconds * 1000)}ms"


def slow_sync_sed(min_sync_period: float) -> str:
    """A sed command that sets every proxy mode's minSyncPeriod in the ConfigMap's YAML, and syncPeriod too where
    its default (30 s) would be the shorter of the two."""
    period = go_duration(min_sync_period)
    edits = [f"-e 's/^\\( *\\)minSyncPeriod: .*$/\\1minSyncPeriod: {period}/'"]
    if min_sync_period > kp.DEFAULT_SYNC_PERIOD:
        edits.append(f"-e 's/^\\( *\\)syncPeriod: .*$/\\1syncPeriod: {period}/'")
    return "sed " + " ".join(edits)


# the DaemonSet recreates each pod after the old one let go of its ports (seconds); past this the line fails and
# the switch deletes them again, which also catches a pod that started on its kubelet's stale ConfigMap
PROXY_RESTART_WAIT_S = 45


def _every_proxy_left(period: str) -> str:
    """A shell test, run on the control-plane node: within PROXY_RESTART_WAIT_S (a second where
    $CHAOSKIT_VERIFY_TRIES says so) every node's kube-proxy answers /configz (metrics are bound to all addresses) with
    a minSyncPeriod other than `period`."""
    internal_ips = 'jsonpath={.items[*].status.addresses[?(@.type=="InternalIP")].address}'
    ips = kubectl("get", "nodes", "-l", REAL_NODES_SELECTOR, "-o", internal_ips)  # a simulated node runs no kube-proxy
    slow = shlex.quote(f'"{kp.CONFIGZ_MIN_SYNC}":"{period}"')
    return (
        f"ips=$({ips}) && end=$(( $(date +%s) + ${{{VERIFY_TRIES}:-{PROXY_RESTART_WAIT_S}}} )) && while :; do left=0;"
        f' for ip in $ips; do c=$(curl -s --max-time 2 "http://$ip:{kp.METRICS_PORT}/configz") &&'
        f""" {{ printf '%s' "$c" | grep -q {slow}; [ $? -eq 1 ]; }} || left=1; done;"""
        ' [ $left -eq 0 ] && break; [ "$(date +%s)" -ge "$end" ] && break; sleep 1; done; [ $left -eq 0 ]'
    )


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
    typically; at most 1.5 periods. Not in IPVS mode, whose rules the probe does not read. Recovery, measured the same
    way: on every node a change landing right after a sync is programmed within 3 s (kind's 1 s period and a sync).
    """

    name = "kube-proxy.slow-sync"
    component = "kube-proxy"
    named = Named("kube-proxy", r"syncs at most")
    no_op = NoOpControl(wait=20.0)  # kind's 1 s minSyncPeriod programs a change at once
    scope = "cluster"  # one ConfigMap for every node's kube-proxy, and every kube-proxy pod restarted
    target_role = "control-plane"
    Params = SlowSyncParams
    effect_timeout = 300.0  # the pods' restart (each waits for the old one to let go of its ports), then 1.5 periods
    hold_watch = None  # its effect check measures rule syncs for up to 1.5 periods: not asked again while held
    recovery_timeout = 120.0

    def __init__(self) -> None:
        self.measured: list[SyncDelays] = []  # every effect measurement, for the report and the tests

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        p = params_of(params, SlowSyncParams)
        period = go_duration(p.min_sync_period)
        get_cm = kubectl("-n", "kube-system", "get", "configmap", "kube-proxy", "-o", "yaml")
        restart = kubectl("-n", "kube-system", "delete", "pod", "-l", kp.POD_SELECTOR, "--wait=false")
        backup = PROXY_CONFIGMAP_BACKUP
        probe = json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": probe_objects(fresh_ip([]))}, separators=(",", ":")
        )
        return FaultPlan(
            self.name,
            node,
            setup=(f"printf '%s\\n' {shlex.quote(probe)} | {kubectl('apply', '-f', '-')}",),  # what the checks change
            apply=(
                f"if [ -e {backup} ]; then echo '{backup} exists: an earlier injection was not reverted"
                " (chaoskit revert)' >&2; exit 1; fi",
                sh("mkdir", "-p", PARKED),
                f"{get_cm} > {backup}.new && mv {backup}.new {backup}",
                f"{slow_sync_sed(p.min_sync_period)} {backup} | {kubectl('replace', '-f', '-')}",
                restart,
            ),
            undo=(
                # resourceVersion dropped: the backup replaces whatever the ConfigMap became meanwhile. The backup
                # goes only once every kube-proxy runs another period: a pod restarted while its kubelet's ConfigMap
                # cache was stale (an API server that just came back) starts slow again, and a failed line makes the
                # switch retry the whole revert. One line: a restore the API server refused waits for no pod.
                f"if [ -f {backup} ]; then sed '/^  resourceVersion: /d' {backup} | {kubectl('replace', '-f', '-')}"
                f" && {restart} && {_every_proxy_left(period)} && rm -f {backup}; fi",
                kubectl("-n", PROBE_NAMESPACE, "delete", "service,endpointslice", PROBE_SERVICE, "--ignore-not-found"),
            ),
            # nothing kept (the undo drops the backup only once every kube-proxy left the period), the ConfigMap
            # kubectl read holds the period nowhere, and every kube-proxy runs another
            verify=(
                every(
                    absent(backup),
                    listed_nowhere(get_cm, f"^ *minSyncPeriod: {period}$", f"minSyncPeriod {period}"),
                    _every_proxy_left(period),
                ),
            ),
            summary=f"set kube-proxy's minSyncPeriod to {period} in kube-system/kube-proxy and restart kube-proxy",
            params=p,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        period = plan.params_as(SlowSyncParams).min_sync_period
        if not kp.proxies_ready(env.kube):
            return False
        _, pods = kp.kube_proxy_pods(env.kube)
        found = measure(env, [p["spec"]["nodeName"] for p in pods], SLOW_FRACTION * period, 1.5 * period + 10)
        self.measured.append(found)
        return found.slow_everywhere

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        """Measured: every node programs a change that lands right after a sync within 3 s (the probe Service is made
        again for it, as the revert deletes it, and deleted once this holds)."""
        if not kp.proxies_ready(env.kube):
            return False
        if env.kube.find(SERVICE_PATH) is None:
            for obj in probe_objects(fresh_ip([])):
                env.kube.apply(obj)
        _, pods = kp.kube_proxy_pods(env.kube)
        found = measure(env, [p["spec"]["nodeName"] for p in pods], FAST_SYNC_S, FAST_WITHIN_S, all_nodes=True)
        self.measured.append(found)
        if not found.fast_everywhere:
            return False
        for path in (SERVICE_PATH, SLICE_PATH):
            env.kube.delete(path, propagation="Background")
        return True
