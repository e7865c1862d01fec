"""API server faults: down, etcd connection timeout, expired serving certificate, leaked watch connections.

Every check asks the API server from inside the control-plane node (curl to its port on the node's loopback),
because several of these faults take away exactly the API a check from outside would need.
"""

from __future__ import annotations

import math
import shlex

from pydantic import BaseModel, Field

from chaoskit.components import apiserver
from chaoskit.env import Env
from chaoskit.errors import ToolError
from chaoskit.faults.base import (
    Fault,
    FaultPlan,
    Named,
    NoOpControl,
    absent,
    every,
    kubectl,
    listed_nowhere,
    local_healthz,
    node_sh,
    register,
    sh,
    unexpired,
    unit_inactive,
)
from chaoskit.faults.control_plane import PARKED, StaticPodDown
from chaoskit.model.params import FaultParams, params_of
from chaoskit.seams.certs import CA_CRT, expired_copy
from chaoskit.seams.nodeexec import Node

API = apiserver.URL
MANIFEST = apiserver.MANIFEST


def api_answers(env: Env, node: Node) -> bool:
    """Whether anything answers HTTP on the API server's port (any status: a failing /readyz still answers); curl
    prints 000 when nothing does, and nothing at all when it could not ask: no answer either way."""
    done = node_sh(env, node, f"curl -sk --max-time 3 -o /dev/null -w '%{{http_code}}' {API}/readyz")
    if not (code := done.stdout.strip()):
        said = done.stderr.strip()[-200:] or f"exit {done.returncode}"
        raise ToolError(f"could not ask {API}/readyz on {node.name}: {said}")
    return code != "000"


@register
class ApiServerDown(StaticPodDown):
    """kube-apiserver stopped: the whole cluster is uncontrollable while running pods keep running.

    No kubectl, no scheduling, no heartbeats recorded. Its static-pod manifest is parked outside
    /etc/kubernetes/manifests, so kubelet stops it; the effect is that nothing answers on the API server's port inside
    the control-plane node. After the revert kubelet starts it again and recovery is /readyz answering ok. The scheduler
    and controller manager lose their leader leases meanwhile and restart, as they would in the field.
    """

    name = "apiserver.down"
    cuts_api = True
    component = "apiserver"
    named = Named("apiserver", r"not running|does not answer")
    no_op = NoOpControl(wait=15.0)  # the API server exits within 2 s of its manifest going
    process = apiserver.PROCESS
    health_port = apiserver.PORT
    effect_timeout = 90.0  # kubelet gives the pod its termination grace period

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return not api_answers(env, plan.node)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return local_healthz(env, plan.node, self.health_port, "/readyz")


ETCD_HOST, ETCD_PORT = apiserver.ETCD_HOST, apiserver.ETCD_PORT
ETCD_TAG = "chaoskit-etcd-timeout"
ETCD_COMMENT = f'--comment "?{ETCD_TAG}"?( |$)'  # as iptables -S prints it: quoted by iptables-nft, not by legacy
# Both directions: requests to etcd and etcd's answers (and keepalives) on connections already open.
ETCD_RULES = (
    ("-o", "lo", "-d", ETCD_HOST, "-p", "tcp", "--dport", ETCD_PORT),
    ("-o", "lo", "-s", ETCD_HOST, "-p", "tcp", "--sport", ETCD_PORT),
)


def _etcd_rule(action: str, match: tuple[str, ...]) -> str:
    return sh("iptables", "-w", "5", action, "OUTPUT", *match, "-m", "comment", "--comment", ETCD_TAG, "-j", "DROP")


@register
class EtcdTimeout(Fault):
    """The API server's traffic to etcd is dropped: requests hang, then fail with etcd timeouts, never refused at once.

    Two iptables rules in the control-plane node's OUTPUT chain DROP loopback TCP to and from etcd's client port
    (on the node's loopback, where kubeadm's --etcd-servers points). Connections the API server already holds hang too:
    filter-table rules see every packet, not only a connection's first (unlike NAT rules, which conntrack skips once
    a flow exists), so no conntrack flush is needed. Evidence: /readyz?verbose reports `[-]etcd failed` within
    seconds, reads and writes hang until their timeout, the API server log shows etcd deadline-exceeded errors. Held
    longer than ~80 s, kubelet's liveness probe restarts the API server, which stays down until etcd answers again.
    The rules carry the comment `chaoskit-etcd-timeout`; the revert deletes exactly those.
    """

    name = "apiserver.etcd-timeout"
    cuts_api = True
    component = "apiserver"
    named = Named("apiserver", r"etcd")
    no_op = NoOpControl(wait=20.0)  # /readyz reports etcd failed within seconds
    effect_timeout = 60.0
    recovery_timeout = 180.0  # a restarted API server needs its post-start hooks

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        check = shlex.quote(f"--etcd-servers=https://{ETCD_HOST}:{ETCD_PORT}")
        return FaultPlan(
            self.name,
            node,
            apply=(
                f"grep -q -- {check} {MANIFEST} || "
                f"{{ echo 'kube-apiserver does not reach etcd at {ETCD_HOST}:{ETCD_PORT} ({MANIFEST})' >&2; exit 1; }}",
                *(_etcd_rule("-I", rule) for rule in ETCD_RULES),
            ),
            undo=tuple(f"while {_etcd_rule('-D', rule)} 2>/dev/null; do :; done" for rule in ETCD_RULES),
            # nothing of ours is left, read from a listing iptables gave
            verify=(listed_nowhere("iptables -w 5 -S OUTPUT", ETCD_COMMENT, "an etcd DROP rule"),),
            summary=f"DROP traffic between kube-apiserver and etcd ({ETCD_HOST}:{ETCD_PORT}) on {node.name}",
            params=params,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        done = node_sh(env, plan.node, f"curl -sk --max-time 10 '{API}/readyz?verbose'", timeout=20)
        return "[-]etcd" in done.stdout or done.returncode == 28  # 28: the request itself timed out

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return local_healthz(env, plan.node, apiserver.PORT, "/readyz")


SERVING_CERT, SERVING_KEY = apiserver.SERVING_CERT, apiserver.SERVING_KEY
PARKED_CERT, PARKED_KEY = f"{PARKED}/apiserver.crt", f"{PARKED}/apiserver.key"


def verified_readyz(env: Env, node: Node) -> str:
    """/readyz as a client verifying the cluster CA sees it: the body, or curl's TLS error."""
    return node_sh(env, node, f"curl -sS --max-time 5 --cacert {CA_CRT} {API}/readyz 2>&1").stdout.strip()


@register
class ApiServerCertExpired(Fault):
    """The API server serves an expired certificate: verifying clients get x509 "certificate has expired".

    The fault re-signs the serving certificate with the cluster CA (same subject, key and SANs) so that it expired
    yesterday, and swaps it in atomically; the original is parked in /etc/kubernetes/chaoskit-parked/.
    kube-apiserver reloads its serving certificate from disk as soon as the file changes (and every minute), the way
    it picks up a renewed one, so it needs no restart on either side. Connections opened before keep working (TLS
    checks certificates at the handshake only); kubelets, controllers and kubectl fail as they reconnect. Effect:
    `curl --cacert ca.crt` from the control-plane node reports the certificate has expired; recovery: /readyz ok
    with verification. The revert puts the original back.
    """

    name = "apiserver.cert-expired"
    cuts_api = True
    component = "apiserver"
    named = Named("apiserver", r"expired")
    no_op = NoOpControl(wait=15.0)  # the API server reloads its certificate at once
    effect_timeout = 90.0  # the reload is immediate; its one-minute resync is the fallback
    recovery_timeout = 90.0

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        staged = f"{SERVING_CERT}.chaoskit"
        return FaultPlan(
            self.name,
            node,
            apply=(
                f"if [ -e {PARKED_CERT} ]; then echo '{PARKED_CERT} exists: an earlier injection was not reverted"
                f" (chaoskit revert)' >&2; exit 1; fi",
                sh("mkdir", "-p", PARKED),
                sh("cp", "-p", SERVING_KEY, PARKED_KEY),
                sh("cp", "-p", SERVING_CERT, PARKED_CERT),
                expired_copy(SERVING_CERT, SERVING_KEY, staged),
                sh("mv", staged, SERVING_CERT),  # a rename: the API server never reads a half-written file
            ),
            undo=(
                f"if [ -f {PARKED_KEY} ]; then mv -f {PARKED_KEY} {SERVING_KEY}; fi",
                f"if [ -f {PARKED_CERT} ]; then mv -f {PARKED_CERT} {SERVING_CERT}; fi",
                sh("rm", "-f", staged),
            ),
            verify=(every(absent(PARKED_CERT, PARKED_KEY, staged), unexpired(SERVING_CERT)),),
            summary=f"replace kube-apiserver's serving certificate on {node.name} with one that expired yesterday",
            params=params,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return "certificate has expired" in verified_readyz(env, plan.node)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return verified_readyz(env, plan.node) == "ok"


class WatchLeakParams(FaultParams):
    watches: int = Field(default=500, ge=1, le=5000, description="Watch connections held open.")


WATCH_DIR = "/run/chaoskit/watch-leak"  # tmpfs: the admin credentials copied here never reach a disk
WATCH_UNIT = "chaoskit-watch-leak"
WATCH_BASELINE = f"{WATCH_DIR}/baseline"
WATCH_UNIT_PROPERTIES = ("--description=chaoskit apiserver.watch-leak", "--property=KillMode=control-group")
CURL_PARALLEL_MAX = 250  # curl caps --parallel-max at 300
# Watches the API server is serving now on namespaced ConfigMap lists, the kind the leak opens: its gauge of
# long-running WATCH requests for that one series. Counting every resource would also count the controllers'
# informers, which come and go by the dozen when an earlier fault restarted them. A failed scrape must fail the
# line, not read as 0, hence the variable rather than a pipe.
WATCH_COUNT = (
    f"""m=$({kubectl("get", "--raw", "/metrics")}) && printf '%s\\n' "$m" | """
    """awk '/^apiserver_longrunning_requests[{]/ && /verb="WATCH"/ && /resource="configmaps"/"""
    """ && /scope="namespace"/ {s += $NF} END {print s + 0}'"""
)


def _watch_script(watches: int) -> str:
    """Background curls holding `watches` HTTP/1.1 watch connections, one TCP connection each."""
    creds = f"--cacert {CA_CRT} --cert {WATCH_DIR}/client.crt --key {WATCH_DIR}/client.key"
    url = f"{API}/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=[{{}}]"  # distinct URLs by glob
    curls = []
    for start in range(0, watches, CURL_PARALLEL_MAX):
        first, last = 3600 + start, 3600 + min(start + CURL_PARALLEL_MAX, watches) - 1
        curls.append(
            f"curl -sN --http1.1 --parallel --parallel-immediate --parallel-max {CURL_PARALLEL_MAX} {creds} "
            f"{shlex.quote(url.format(f'{first}-{last}'))} >/dev/null &"
        )
    return " ".join(curls) + " wait"


@register
class WatchLeak(Fault):
    """Watch connections to the API server leaked by the hundred: apiserver_longrunning_requests climbs and stays.

    As a leaking client or controller leaves them: opened, never closed, each holding API server memory. A transient
    systemd unit (chaoskit-watch-leak) on the control-plane node runs curl with the admin client certificate,
    holding `watches` HTTP/1.1 watches on ConfigMaps in `default`, one TCP connection each. The setup records the
    gauge of namespaced ConfigMap watches first; the effect is that gauge at least watches/2 above the baseline;
    the revert stops the unit (its cgroup: exactly those curls) and deletes the copied credentials; recovery is the
    gauge back within max(10, watches/10) of the baseline.
    """

    name = "apiserver.watch-leak"
    component = "apiserver"
    named = Named("apiserver", r"watch")
    no_op = NoOpControl(wait=15.0)  # the watches open within seconds
    Params = WatchLeakParams
    effect_timeout = 60.0
    recovery_timeout = 60.0

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        p = params_of(params, WatchLeakParams)
        user = "{.users[0].user.client-%s-data}"
        return FaultPlan(
            self.name,
            node,
            setup=(
                f"mkdir -p {WATCH_DIR} && chmod 700 {WATCH_DIR}",
                f"{WATCH_COUNT} > {WATCH_BASELINE}.new && mv {WATCH_BASELINE}.new {WATCH_BASELINE}",
            ),
            apply=(
                f"{kubectl('config', 'view', '--raw', '-o', f'jsonpath={user}' % 'certificate')} | base64 -d"
                f" > {WATCH_DIR}/client.crt",
                f"umask 077 && {kubectl('config', 'view', '--raw', '-o', f'jsonpath={user}' % 'key')} | base64 -d"
                f" > {WATCH_DIR}/client.key",
                sh("systemd-run", f"--unit={WATCH_UNIT}", *WATCH_UNIT_PROPERTIES, "sh", "-c", _watch_script(p.watches)),
            ),
            undo=(
                f"systemctl stop {WATCH_UNIT}.service 2>/dev/null; systemctl reset-failed {WATCH_UNIT}.service"
                " 2>/dev/null; true",
                # the baseline stays (a number, on tmpfs): the recovery check compares against it
                sh("rm", "-f", f"{WATCH_DIR}/client.crt", f"{WATCH_DIR}/client.key"),
            ),
            verify=(every(unit_inactive(f"{WATCH_UNIT}.service"), absent(f"{WATCH_DIR}/client.key")),),
            summary=f"hold {p.watches} watch connections open against kube-apiserver from {node.name}",
            params=p,
        )

    def _above_baseline(self, env: Env, plan: FaultPlan) -> int | None:
        done = node_sh(env, plan.node, f"cat {WATCH_BASELINE} && {WATCH_COUNT}")
        numbers = done.stdout.split()
        if done.returncode != 0 or len(numbers) != 2:
            return None
        return int(numbers[1]) - int(numbers[0])

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        extra = self._above_baseline(env, plan)
        return extra is not None and extra >= math.ceil(plan.params_as(WatchLeakParams).watches / 2)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        extra = self._above_baseline(env, plan)
        return extra is not None and extra <= max(10, plan.params_as(WatchLeakParams).watches // 10)
