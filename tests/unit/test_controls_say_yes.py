"""Every fault's effect check made to say yes on a fake where the fault holds and no on one where it does not, and
its recovery check the other way round: a control proves something only if it can answer both ways.

The fakes answer as the components do: the API server's JSON and refusals, the outputs and exit codes of the commands
the checks run in a node. None of them reads back what chaoskit wrote: where a fake's answer follows an object the
fault made (a webhook configuration, a deleted binding), it follows it as the API server does.
"""

from __future__ import annotations

import functools
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from chaoskit.components import kube_proxy as kp
from chaoskit.components.common import leader_lease
from chaoskit.env import Env
from chaoskit.errors import ToolError
from chaoskit.faults.apiserver import AdmissionWebhookFailing, ApiServerCertExpired, ApiServerDown, WebhookParams
from chaoskit.faults.apiserver.admission import backend_service, webhook_configuration
from chaoskit.faults.controller_manager import ControllerManagerDown, PermissionParams, PermissionRevoked
from chaoskit.faults.dns import CorefileParams, DnsDown, DnsMisconfigured, DnsParams
from chaoskit.faults.kube_proxy import KubeProxyFlushRules, KubeProxySlowSync, SlowSyncParams
from chaoskit.faults.kubelet import ContainerRuntimeUnresponsive, KubeletStopped
from chaoskit.faults.metrics_server import MetricsServerDown, MetricsServerParams
from chaoskit.faults.node import NodePartitioned
from chaoskit.faults.scheduler import DOWN_PROBE, PROBE_NAMESPACE, SchedulerDown
from chaoskit.measurements import rule_sync_delay
from chaoskit.measurements.rule_sync_delay import SERVICE_PATH, SLICE_PATH, OnRules, probe_objects
from chaoskit.model.params import NoParams
from chaoskit.registry import FAULTS, load_catalog
from chaoskit.seams.kube import FakeKube, Forbidden, KubeError, NotFound, Obj, object_path
from chaoskit.seams.nodeexec import FakeNodeExec, Node, named
from chaoskit.seams.shell import Completed, FakeRunner
from tests.unit.fake_kube_proxy import FAST, SimulatedKubeProxy

CP, W = "chaoskit-control-plane", "chaoskit-worker"
CP_NODE, W_NODE = Node(CP, "control-plane"), Node(W, "worker")
NodeAnswer = Callable[[tuple[str, ...]], Completed]

# Every registered fault, each with a test that makes its effect check say yes where it holds and no where it does
# not. A new fault must add such a test (here or beside its other tests) and its name here: the registry must match.
COVERED = frozenset(
    {
        "apiserver.admission-webhook-failing",
        "apiserver.admission-webhook-slow",  # test_admission_latency.py
        "apiserver.cert-expired",
        "apiserver.down",
        "apiserver.etcd-timeout",  # test_fault_plans.py
        "apiserver.watch-leak",  # test_fault_plans.py
        "controller-manager.controller-stuck",  # test_controller_faults.py
        "controller-manager.down",
        "controller-manager.hung",  # test_effect_checks.py
        "controller-manager.permission-revoked",
        "controller-manager.quota-exhausted",  # test_controller_faults.py
        "dns.down",
        "dns.misconfigured",
        "kube-proxy.flush-rules",
        "kube-proxy.freeze",  # test_effect_checks.py
        "kube-proxy.slow-sync",
        "kubelet.cert-expired",  # test_effect_checks.py
        "kubelet.disk-pressure",  # test_fault_plans.py
        "kubelet.runtime-unresponsive",
        "kubelet.stop",
        "metrics-server.down",
        "node.partitioned",
        "scheduler.down",
        "scheduler.unschedulable",  # test_fault_plans.py
    }
)


def test_every_registered_fault_has_a_control_test_that_says_yes_and_no() -> None:
    load_catalog()
    assert set(FAULTS.names()) == COVERED, "a new fault needs its yes/no control test, and its name in COVERED"


# --- the fakes ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Says:
    """What a command prints and exits with in a node, as the real tool does (stderr in stdout where the line
    redirects it with 2>&1)."""

    stdout: str = ""
    rc: int = 0
    stderr: str = ""


def on_node(node: str, lines: dict[str, Says]) -> NodeAnswer:
    """A node answering each command by the first fragment of `lines` it holds; a command run elsewhere, or one no
    fragment answers, fails the test (a check must not pass on an answer nobody gave)."""

    def respond(argv: tuple[str, ...]) -> Completed:
        assert argv[0] == node, f"asked on {argv[0]}, not on the plan's node {node}: {argv}"
        said = " ".join(argv[1:])
        for fragment, says in lines.items():
            if fragment in said:
                return Completed(argv, says.rc, says.stdout, says.stderr)
        raise AssertionError(f"nothing on the fake node answers: {said}")

    return respond


def nothing_runs(argv: tuple[str, ...]) -> Completed:
    raise AssertionError(f"this check asks the API server only, yet ran on a node: {argv}")


def env_of(kube: FakeKube, answer: NodeAnswer = nothing_runs) -> Env:
    return Env(kube, FakeNodeExec(FakeRunner(responder=answer)), "chaoskit")


def micro_time(ago: float) -> str:
    """A MicroTime `ago` seconds back, as the API server writes a Lease's times."""
    return datetime.fromtimestamp(time.time() - ago, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def node_object(name: str, ready: str, labels: dict[str, str] | None = None) -> Obj:
    why = {
        "True": ("KubeletReady", "kubelet is posting ready status"),
        "Unknown": ("NodeStatusUnknown", "Kubelet stopped posting node status."),
    }[ready]
    condition = {"type": "Ready", "status": ready, "reason": why[0], "message": why[1]}
    meta = {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": {}, "status": {"conditions": [condition]}}


def lease(namespace: str, name: str, holder: str, renewed_ago: float, duration: int, acquired_ago: float) -> Obj:
    spec = {
        "holderIdentity": holder,
        "leaseDurationSeconds": duration,
        "acquireTime": micro_time(acquired_ago),
        "renewTime": micro_time(renewed_ago),
        "leaseTransitions": 3,
    }
    meta = {"name": name, "namespace": namespace}
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": spec}


# --- apiserver.down, apiserver.cert-expired --------------------------------------------------------------------------

STATUS_ONLY = "-w '%{http_code}'"  # the look that asks whether anything answers HTTP on 6443
READYZ = "https://127.0.0.1:6443/readyz"
REFUSED = "curl: (7) Failed to connect to 127.0.0.1 port 6443 after 0 ms: Couldn't connect to server\n"
API_SERVING = {STATUS_ONLY: Says("200"), READYZ: Says("ok")}
API_GONE = {STATUS_ONLY: Says("000", 7), READYZ: Says("", 7)}  # curl -w prints 000 for no answer
NOT_READY = "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\nreadyz check failed\n"
API_NOT_READY = {STATUS_ONLY: Says("500"), READYZ: Says(NOT_READY)}  # curl without -f prints the 500's body, exit 0


def test_apiserver_down_is_seen_when_nothing_answers_on_its_port_and_not_while_anything_does() -> None:
    fault = ApiServerDown()
    plan = fault.plan(CP_NODE, NoParams())
    assert fault.took_effect(env_of(FakeKube(), on_node(CP, API_GONE)), plan)
    assert not fault.recovered(env_of(FakeKube(), on_node(CP, API_GONE)), plan)
    assert not fault.took_effect(env_of(FakeKube(), on_node(CP, API_SERVING)), plan)
    assert fault.recovered(env_of(FakeKube(), on_node(CP, API_SERVING)), plan)
    # running but not ready: not down, and not recovered either
    assert not fault.took_effect(env_of(FakeKube(), on_node(CP, API_NOT_READY)), plan)
    assert not fault.recovered(env_of(FakeKube(), on_node(CP, API_NOT_READY)), plan)


VERIFIED_READYZ = f"--cacert /etc/kubernetes/pki/ca.crt {READYZ} 2>&1"
SSL_HELP = (
    "More details here: https://curl.se/docs/sslcerts.html\n\ncurl failed to verify the legitimacy of the server and "
    "therefore could not\nestablish a secure connection to it.\n"
)
CERT_EXPIRED = Says(f"curl: (60) SSL certificate problem: certificate has expired\n{SSL_HELP}", 60)
OTHER_ISSUER = Says(f"curl: (60) SSL certificate problem: unable to get local issuer certificate\n{SSL_HELP}", 60)


def test_apiserver_cert_expired_is_seen_when_a_verifying_client_is_told_it_expired_and_not_otherwise() -> None:
    fault = ApiServerCertExpired()
    plan = fault.plan(CP_NODE, NoParams())

    def env(says: Says) -> Env:
        return env_of(FakeKube(), on_node(CP, {VERIFIED_READYZ: says}))

    assert fault.took_effect(env(CERT_EXPIRED), plan) and not fault.recovered(env(CERT_EXPIRED), plan)
    assert not fault.took_effect(env(Says("ok")), plan) and fault.recovered(env(Says("ok")), plan)
    # another TLS failure, or no API server at all, is not this fault, and no recovery
    for says in (OTHER_ISSUER, Says(REFUSED, 7)):
        assert not fault.took_effect(env(says), plan) and not fault.recovered(env(says), plan)


# --- controller-manager.down, scheduler.down ---------------------------------------------------------------------


def static_pod_node(process: str, port: int, running: bool, age_s: int = 42) -> dict[str, Says]:
    """A control-plane node's answers about one static-pod process: pgrep, ps and its /healthz."""
    comm = process[:15]  # the kernel keeps 15 characters of a process name
    if not running:  # pgrep and ps -C exit 1 for none; curl 7 for a refused connection
        return {f"pgrep -x {comm}": Says("", 1), f"-C {comm}": Says("", 1), f"127.0.0.1:{port}/healthz": Says("", 7)}
    return {
        f"pgrep -x {comm}": Says("2817\n"),
        f"-C {comm}": Says(f"{age_s:>7}\n"),
        f"127.0.0.1:{port}/healthz": Says("ok"),
    }


def leader(name: str, acquired_ago: float, renewed_ago: float = 1.0) -> dict[str, Obj]:
    holder = f"{CP}_6f1c2a8e-3b7d-4c1e-9a0f-2d5b8e7c4a19"
    return {leader_lease(name): lease("kube-system", name, holder, renewed_ago, 15, acquired_ago)}


def test_controller_manager_down_is_seen_when_its_process_is_gone_and_recovered_once_a_new_one_leads() -> None:
    fault = ControllerManagerDown()
    plan = fault.plan(CP_NODE, NoParams())
    process, port = "kube-controller-manager", 10257
    stopped = env_of(FakeKube(leader(process, 600, renewed_ago=40)), on_node(CP, static_pod_node(process, port, False)))
    assert fault.took_effect(stopped, plan) and not fault.recovered(stopped, plan)
    leading = env_of(FakeKube(leader(process, acquired_ago=40)), on_node(CP, static_pod_node(process, port, True)))
    assert not fault.took_effect(leading, plan) and fault.recovered(leading, plan)
    # back and healthy, but the lease is still the stopped one's: the new process does not lead yet
    waiting = env_of(FakeKube(leader(process, 600, renewed_ago=1)), on_node(CP, static_pod_node(process, port, True)))
    assert not fault.recovered(waiting, plan)


class SchedulingKube(FakeKube):
    """The API server with a scheduler behind it: while `binds`, a pod made with no node is bound to the worker."""

    def __init__(self, objects: dict[str, Obj], binds: bool) -> None:
        super().__init__(objects)
        self.binds = binds

    def apply(self, obj: Obj) -> Any:
        made = super().apply(obj)
        if self.binds and obj["kind"] == "Pod" and not obj["spec"].get("nodeName"):
            return self.patch(object_path(obj), {"spec": {"nodeName": W}})
        return made


def test_scheduler_down_is_seen_when_its_process_is_gone_and_recovered_once_a_new_one_binds_pods(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import chaoskit.faults.scheduler as scheduler

    monkeypatch.setattr(scheduler, "PROBE_BIND_S", 0.2)  # a fake scheduler binds at once, or never
    fault = SchedulerDown()
    plan = fault.plan(CP_NODE, NoParams())
    process, port = "kube-scheduler", 10259

    def env(running: bool, binds: bool, acquired_ago: float) -> tuple[Env, SchedulingKube]:
        kube = SchedulingKube(leader(process, acquired_ago, renewed_ago=1 if running else 40), binds)
        return env_of(kube, on_node(CP, static_pod_node(process, port, running))), kube

    stopped, _ = env(running=False, binds=False, acquired_ago=600)
    assert fault.took_effect(stopped, plan) and not fault.recovered(stopped, plan)
    working, kube = env(running=True, binds=True, acquired_ago=40)
    assert not fault.took_effect(working, plan) and fault.recovered(working, plan)
    assert f"/api/v1/namespaces/{PROBE_NAMESPACE}/pods/{DOWN_PROBE}" not in kube.objects, "the probe goes after"
    idle, _ = env(running=True, binds=False, acquired_ago=40)  # leading, yet binding nothing
    assert not fault.recovered(idle, plan)


# --- controller-manager.permission-revoked -----------------------------------------------------------------------

RBAC = "/apis/rbac.authorization.k8s.io/v1"
REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
RS_ROLE_NAME = "system:controller:replicaset-controller"
# the ClusterRole and binding the API server's RBAC bootstrap policy makes for the replicaset controller
RS_ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {"name": RS_ROLE_NAME, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
    "rules": [
        {
            "apiGroups": ["apps", "extensions"],
            "resources": ["replicasets"],
            "verbs": ["get", "list", "update", "watch"],
        },
        {"apiGroups": ["apps", "extensions"], "resources": ["replicasets/status"], "verbs": ["update"]},
        {"apiGroups": ["apps", "extensions"], "resources": ["replicasets/finalizers"], "verbs": ["update"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete", "list", "patch", "watch"]},
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]},
    ],
}
RS_BINDING = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": RS_ROLE_NAME, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": RS_ROLE_NAME},
    "subjects": [{"kind": "ServiceAccount", "name": "replicaset-controller", "namespace": "kube-system"}],
}
RS_ACCOUNT = "system:serviceaccount:kube-system:replicaset-controller"


class AuthorizingKube(FakeKube):
    """The API server's RBAC authorizer and the replicaset controller behind it: a SubjectAccessReview is answered
    from the ClusterRoleBindings and ClusterRoles stored (and never stored itself), what is created gets a uid, and a
    ReplicaSet made gets its pod while `controllers_run` and the authorizer lets the controller create pods."""

    def __init__(self, objects: dict[str, Obj], controllers_run: bool = True) -> None:
        super().__init__(objects)
        self.controllers_run = controllers_run

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        if method == "POST" and path == REVIEWS:
            self.calls.append((method, path))
            return {**body, "status": self.authorize(body["spec"])}
        if method == "POST":
            body = {**body, "metadata": {**(body.get("metadata") or {}), "uid": str(uuid.uuid4())}}
        made = super().request(method, path, body, query)
        if method == "POST" and made.get("kind") == "ReplicaSet" and self.controllers_run:
            self.replicaset_controller(made)
        return made

    def authorize(self, spec: dict[str, Any]) -> dict[str, Any]:
        asked = spec["resourceAttributes"]
        resource = asked["resource"] + (f"/{asked['subresource']}" if asked.get("subresource") else "")
        for path, binding in sorted(self.objects.items()):
            if not path.startswith(f"{RBAC}/clusterrolebindings/"):
                continue
            accounts = {
                f"system:serviceaccount:{s.get('namespace')}:{s.get('name')}"
                for s in binding.get("subjects") or []
                if s.get("kind") == "ServiceAccount"
            }
            role = self.objects.get(f"{RBAC}/clusterroles/{binding['roleRef']['name']}") or {}
            for rule in role.get("rules") or [] if spec["user"] in accounts else []:
                verb, group = asked["verb"], asked["group"]
                if verb in rule["verbs"] and group in rule["apiGroups"] and resource in rule["resources"]:
                    name = binding["metadata"]["name"]
                    return {"allowed": True, "reason": f'RBAC: allowed by ClusterRoleBinding "{name}"'}
        return {"allowed": False}

    def replicaset_controller(self, rs: Obj) -> None:
        ns, template = rs["metadata"]["namespace"], rs["spec"]["template"]
        attributes = {"namespace": ns, "verb": "create", "group": "", "resource": "pods"}
        if not self.authorize({"user": RS_ACCOUNT, "resourceAttributes": attributes})["allowed"]:
            return  # refused with a 403: the controller retries, and no pod is made
        owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "controller": True}
        owner.update({k: rs["metadata"][k] for k in ("name", "uid")})
        meta = {"generateName": f"{rs['metadata']['name']}-", "namespace": ns, "ownerReferences": [owner]}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {**meta, "labels": template["metadata"]["labels"]}}
        self.request("POST", f"/api/v1/namespaces/{ns}/pods", {**pod, "spec": template["spec"]})


def test_permission_revoked_is_seen_when_the_authorizer_refuses_the_controller_and_not_while_it_allows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import chaoskit.faults.controller_manager.permission as permission

    monkeypatch.setattr(permission, "DUTY_WAIT_DEFAULT_S", 0.3)  # the fake controller acts at once, or never
    fault = PermissionRevoked()
    plan = fault.plan(CP_NODE, PermissionParams(controller="replicaset"))
    role = {object_path(RS_ROLE): RS_ROLE}
    bound = {**role, object_path(RS_BINDING): RS_BINDING}
    revoked = env_of(AuthorizingKube(role))
    assert fault.took_effect(revoked, plan) and not fault.recovered(revoked, plan)
    kube = AuthorizingKube(bound)
    assert not fault.took_effect(env_of(kube), plan) and fault.recovered(env_of(kube), plan)
    assert not [p for p in kube.objects if "/replicasets/" in p or p.startswith(REVIEWS)], "nothing of the look stays"
    # the binding back, but the controller does nothing: the authorizer's yes alone is no recovery
    assert not fault.recovered(env_of(AuthorizingKube(bound, controllers_run=False)), plan)


# --- dns.down, dns.misconfigured -----------------------------------------------------------------------------------

KUBE_DNS_IP, API_IP = "10.96.0.10", "10.96.0.1"
SERVICE_IPS = {"kubernetes.default.svc.cluster.local": API_IP, "kube-dns.kube-system.svc.cluster.local": KUBE_DNS_IP}


def dns_services(kube_dns: bool = True) -> FakeKube:
    def service(namespace: str, name: str, ip: str) -> Obj:
        meta = {"name": name, "namespace": namespace}
        return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"clusterIP": ip, "type": "ClusterIP"}}

    objects = {"/api/v1/namespaces/default/services/kubernetes": service("default", "kubernetes", API_IP)}
    if kube_dns:
        objects["/api/v1/namespaces/kube-system/services/kube-dns"] = service("kube-system", "kube-dns", KUBE_DNS_IP)
    return FakeKube(objects)


def _question_name(question: bytes) -> str:
    labels, at = [], 0
    while question[at]:
        labels.append(question[at + 1 : at + 1 + question[at]].decode())
        at += 1 + question[at]
    return ".".join(labels)


def coredns(state: str) -> NodeAnswer:
    """What the lookup line prints in a node when the kube-dns ClusterIP leads to CoreDNS `serving`, to a CoreDNS
    answering NXDOMAIN for the cluster's zone (`nxdomain`), or to no endpoint (`gone`: kube-proxy rejects, so dd's
    read is refused); any other address answers nothing (dd is cut off by `timeout`, exit 124)."""

    def respond(argv: tuple[str, ...]) -> Completed:
        line = argv[-1]
        assert "/dev/udp/" in line, f"not a DNS lookup: {argv}"
        found = re.search(r's="([^"]*)"', line)
        server = found.group(1) if found else ""
        asked = bytes(int(h, 16) for h in re.findall(r"\\x([0-9a-f]{2})", line))  # the query as printf writes it
        said = [f"@@dns server {server}", "@@dns times 1718000000.512301 1718000000.513020"]
        if server != KUBE_DNS_IP:
            said = [f"@@dns server {server}", "@@dns times 1718000000.512301 1718000002.515112", "@@dns rc 124"]
            return Completed(argv, 0, "\n".join([*said, "@@dns err ", "@@dns reply"]) + "\n")
        if state == "gone":
            said += ["@@dns rc 1", "@@dns err dd: error reading 'standard input': Connection refused", "@@dns reply"]
            return Completed(argv, 0, "\n".join(said) + "\n")
        name = _question_name(asked[12:])
        address = SERVICE_IPS.get(name) if state == "serving" else None
        rcode = 0 if address else 3  # NOERROR, NXDOMAIN
        counts = bytes([0, 1, 0, 1 if address else 0, 0, 0, 0, 0])  # one question, one A record or none
        reply = asked[:2] + (0x8180 | rcode).to_bytes(2, "big") + counts + asked[12:]  # the question echoed back
        if address:  # a pointer to the question's name, type A, class IN, TTL 5, four bytes of address
            reply += b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x05\x00\x04" + bytes(map(int, address.split(".")))
        said += ["@@dns rc 0", "@@dns err ", "@@dns reply " + " ".join(f"{b:02x}" for b in reply)]
        return Completed(argv, 0, "\n".join(said) + "\n")

    return respond


def test_dns_down_is_seen_when_the_lookup_goes_unanswered_and_not_while_coredns_answers() -> None:
    fault = DnsDown()
    plan = fault.plan(CP_NODE, DnsParams())
    gone = env_of(dns_services(), coredns("gone"))
    assert fault.took_effect(gone, plan) and not fault.recovered(gone, plan)
    serving = env_of(dns_services(), coredns("serving"))
    assert not fault.took_effect(serving, plan) and fault.recovered(serving, plan)
    # an answer, however wrong, is not DNS down; nor is an API that cannot say where DNS is
    assert not fault.took_effect(env_of(dns_services(), coredns("nxdomain")), plan)
    assert not fault.took_effect(env_of(dns_services(kube_dns=False), coredns("gone")), plan)


def test_dns_misconfigured_is_seen_when_the_service_name_gets_nxdomain_and_not_while_it_resolves() -> None:
    fault = DnsMisconfigured()
    plan = fault.plan(CP_NODE, CorefileParams())
    wrong = env_of(dns_services(), coredns("nxdomain"))
    assert fault.took_effect(wrong, plan) and not fault.recovered(wrong, plan)
    serving = env_of(dns_services(), coredns("serving"))
    assert not fault.took_effect(serving, plan) and fault.recovered(serving, plan)
    gone = env_of(dns_services(), coredns("gone"))  # no answer at all: another fault, and no recovery
    assert not fault.took_effect(gone, plan) and not fault.recovered(gone, plan)


# --- kube-proxy.flush-rules, kube-proxy.slow-sync ----------------------------------------------------------------

KUBERNETES_SERVICE = {
    "/api/v1/namespaces/default/services/kubernetes": {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default"},
        "spec": {"clusterIP": API_IP, "ports": [{"name": "https", "port": 443, "targetPort": 6443}]},
    }
}
TIMED_OUT = Says("curl: (28) Connection timed out after 3002 milliseconds\n", 28)


def proxy_node(looks: Sequence[int], reaches_api: bool) -> NodeAnswer:
    """A worker whose KUBE-SERVICES chain holds `looks` rules at each of the recovery check's looks (iptables mode:
    grep -c prints 0 and exits 1 for none), and whose ClusterIP of `kubernetes` reaches the API server or not."""
    return on_node(
        W,
        {
            "seq 4": Says("".join(f"{n}\n" for n in looks)),  # the loop's last command is its sleep: exit 0
            "iptables -t nat -S KUBE-SERVICES": Says(f"{looks[0]}\n", 0 if looks[0] else 1),
            f"https://{API_IP}:443/readyz": Says("ok") if reaches_api else TIMED_OUT,
        },
    )


def test_flush_rules_is_seen_when_no_service_rule_is_left_and_not_while_they_route() -> None:
    fault = KubeProxyFlushRules()
    plan = fault.plan(W_NODE, NoParams())
    flushed = env_of(FakeKube(KUBERNETES_SERVICE), proxy_node((0, 0, 0, 0), reaches_api=False))
    assert fault.took_effect(flushed, plan) and not fault.recovered(flushed, plan)
    routing = env_of(FakeKube(KUBERNETES_SERVICE), proxy_node((14, 14, 14, 14), reaches_api=True))
    assert not fault.took_effect(routing, plan) and fault.recovered(routing, plan)
    # a kube-proxy sync wrote them back between two flushes: still held
    resynced = env_of(FakeKube(KUBERNETES_SERVICE), proxy_node((14, 0, 14, 14), reaches_api=True))
    assert not fault.recovered(resynced, plan)
    # rules in place while the ClusterIP reaches nothing (the API server away): not this fault
    assert not fault.took_effect(env_of(FakeKube(KUBERNETES_SERVICE), proxy_node((14,), reaches_api=False)), plan)


def proxy_cluster(monkeypatch: pytest.MonkeyPatch, periods: dict[str, float]) -> Env:
    """kube-proxy Ready on each node of `periods`, syncing at most once a period there, and the probe Service the
    fault's setup makes (its ClusterIP given by the API server); the real measurement runs on it, its in-node probe
    replaced by the simulated sync runners."""
    import chaoskit.faults.kube_proxy as kube_proxy

    service, endpoint_slice = probe_objects("198.51.100.1")
    service["spec"]["clusterIP"] = "10.96.201.17"
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    pods = {
        f"{kp.PODS}/kube-proxy-{n}": {
            "metadata": {"name": f"kube-proxy-{n}", "labels": {"k8s-app": "kube-proxy"}},
            "spec": {"nodeName": n},
            "status": ready,
        }
        for n in periods
    }
    daemonset = {"metadata": {"name": "kube-proxy"}, "status": {"desiredNumberScheduled": len(periods)}}
    kube = FakeKube({SERVICE_PATH: service, SLICE_PATH: endpoint_slice, kp.DAEMONSET: daemonset, **pods})

    def probe(env: Env, node: str, cluster_ip: str, on_rules: OnRules) -> SimulatedKubeProxy:
        assert cluster_ip == "10.96.201.17"
        return SimulatedKubeProxy(kube, node, periods[node], on_rules, synced_at_start=True)

    measure = functools.partial(rule_sync_delay.measure, timing=FAST, probe=probe, synced=lambda env, node: True)
    monkeypatch.setattr(kube_proxy, "measure", measure)
    return env_of(kube)


def test_slow_sync_is_seen_when_every_node_holds_a_change_back_and_not_at_kinds_own_period(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import chaoskit.faults.kube_proxy as kube_proxy

    monkeypatch.setattr(kube_proxy, "FAST_SYNC_S", 0.3)  # recovery's bound, scaled down as the period is
    monkeypatch.setattr(kube_proxy, "FAST_WITHIN_S", 2.0)
    fault = KubeProxySlowSync()
    # a period of 0.6 s (the params' floor is 5 s): the same judgement, at a tenth of the time
    plan = fault.plan(CP_NODE, SlowSyncParams.model_construct(min_sync_period=0.6))
    slow, kinds = {CP: 0.6, W: 0.6}, {CP: 0.02, W: 0.02}
    assert fault.took_effect(proxy_cluster(monkeypatch, slow), plan)
    assert not fault.recovered(proxy_cluster(monkeypatch, slow), plan)
    assert not fault.took_effect(proxy_cluster(monkeypatch, kinds), plan)
    assert not fault.took_effect(proxy_cluster(monkeypatch, {CP: 0.6, W: 0.02}), plan), "one node still fast"
    assert fault.recovered(proxy_cluster(monkeypatch, kinds), plan)


# --- kubelet.runtime-unresponsive, kubelet.stop, node.partitioned ------------------------------------------------

CRI_INFO = "crictl --timeout 3s info"
CRI_ANSWERS = Says(
    '{\n  "status": {\n    "conditions": [\n'
    '      {"type": "RuntimeReady", "status": true, "reason": "", "message": ""},\n'
    '      {"type": "NetworkReady", "status": true, "reason": "", "message": ""}\n    ]\n  }\n}\n'
)
DEADLINE = "rpc error: code = DeadlineExceeded desc = context deadline exceeded"
CRI_HANGS = Says(
    "",
    1,
    f'E0612 10:00:03.004211    4121 remote_runtime.go:633] "Status from runtime service failed" err="{DEADLINE}"\n'
    f'time="2024-06-12T10:00:03Z" level=fatal msg="getting status of runtime: {DEADLINE}"\n',
)


def test_runtime_unresponsive_is_seen_when_the_cri_does_not_answer_and_not_while_it_does() -> None:
    fault = ContainerRuntimeUnresponsive()
    plan = fault.plan(W_NODE, NoParams())
    frozen = env_of(FakeKube(), on_node(W, {CRI_INFO: CRI_HANGS}))
    assert fault.took_effect(frozen, plan) and not fault.recovered(frozen, plan)
    answering = env_of(FakeKube(), on_node(W, {CRI_INFO: CRI_ANSWERS}))
    assert not fault.took_effect(answering, plan) and fault.recovered(answering, plan)


def test_kubelet_stop_is_seen_when_the_node_goes_not_ready_and_not_before() -> None:
    fault = KubeletStopped()
    plan = fault.plan(W_NODE, NoParams())
    unknown = env_of(FakeKube({f"/api/v1/nodes/{W}": node_object(W, "Unknown")}))
    assert fault.took_effect(unknown, plan) and not fault.recovered(unknown, plan)
    ready = env_of(FakeKube({f"/api/v1/nodes/{W}": node_object(W, "True")}))
    assert not fault.took_effect(ready, plan) and fault.recovered(ready, plan)


KUBELET_ACTIVE = "systemctl is-active --quiet kubelet"  # --quiet: nothing printed, exit 0 active, 3 inactive


def partition_env(renewed_ago: float, ready: str, kubelet_rc: int = 0) -> Env:
    heartbeat = lease("kube-node-lease", W, W, renewed_ago, 40, acquired_ago=3600)
    objects = {f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{W}": heartbeat}
    objects[f"/api/v1/nodes/{W}"] = node_object(W, ready)
    return env_of(FakeKube(objects), on_node(W, {KUBELET_ACTIVE: Says("", kubelet_rc)}))


def test_node_partitioned_is_seen_when_a_running_kubelets_heartbeat_goes_stale_and_not_while_it_renews() -> None:
    fault = NodePartitioned()
    plan = fault.plan(W_NODE, NoParams())
    cut = partition_env(renewed_ago=25, ready="Unknown")  # two renewals missed of a 40 s lease, kubelet running
    assert fault.took_effect(cut, plan) and not fault.recovered(cut, plan)
    renewing = partition_env(renewed_ago=3, ready="True")
    assert not fault.took_effect(renewing, plan) and fault.recovered(renewing, plan)
    # a stale heartbeat from a kubelet that is not running is kubelet.stop, not a partition
    assert not fault.took_effect(partition_env(renewed_ago=25, ready="Unknown", kubelet_rc=3), plan)
    # renewing again, but the node controller has not marked it Ready yet
    assert not fault.recovered(partition_env(renewed_ago=3, ready="Unknown"), plan)


# --- metrics-server.down -------------------------------------------------------------------------------------------


class AggregatingKube(FakeKube):
    """The API server proxying metrics.k8s.io to metrics-server: 503 while metrics-server has no endpoint (`scraped`
    None), else the NodeMetrics of the nodes it has scraped so far."""

    def __init__(self, objects: dict[str, Obj], scraped: Sequence[str] | None) -> None:
        super().__init__(objects)
        self.scraped = scraped

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        if not path.startswith("/apis/metrics.k8s.io/"):
            return super().request(method, path, body, query)
        self.calls.append((method, path))
        if self.scraped is None:
            unable = "the server is currently unable to handle the request (get nodes.metrics.k8s.io)"
            raise KubeError(f"{method} {path}: HTTP 503 Service Unavailable: {unable}", 503)
        usage = {"cpu": "187m", "memory": "612Mi"}
        sample = {"timestamp": micro_time(9), "window": "15s", "usage": usage}
        items = [{"metadata": {"name": n}, **sample} for n in self.scraped]
        return {"kind": "NodeMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}, "items": items}


def metrics_env(scraped: Sequence[str] | None) -> Env:
    nodes = {f"/api/v1/nodes/{n}": node_object(n, "True") for n in (CP, W)}
    nodes["/api/v1/nodes/kwok-node-0"] = node_object("kwok-node-0", "True", {"type": "kwok"})  # no kubelet to scrape
    return env_of(AggregatingKube(nodes, scraped))


def test_metrics_server_down_is_seen_when_the_metrics_api_answers_503_and_not_while_it_serves_every_node() -> None:
    fault = MetricsServerDown()
    plan = fault.plan(CP_NODE, MetricsServerParams())
    assert fault.took_effect(metrics_env(None), plan) and not fault.recovered(metrics_env(None), plan)
    assert not fault.took_effect(metrics_env([CP, W]), plan) and fault.recovered(metrics_env([CP, W]), plan)
    assert not fault.recovered(metrics_env([CP]), plan), "back, but the worker not scraped yet"


# --- apiserver.admission-webhook-failing -------------------------------------------------------------------------

WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"


class AdmittingKube(FakeKube):
    """The API server admitting a pod create: refused in a namespace that is not there or is terminating, then sent
    to each validating webhook whose rules and namespaceSelector take it. A webhook whose Service has no ready
    endpoint cannot be called, and under failurePolicy Fail the create is refused, a dry run's too (it runs the whole
    chain); a webhook that can be called is taken to admit."""

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        parts = path.strip("/").split("/")
        if method == "POST" and parts[:3] == ["api", "v1", "namespaces"] and parts[4:] == ["pods"]:
            self.admit(path, parts[3])
        return super().request(method, path, body, query)

    def admit(self, path: str, ns: str) -> None:
        namespace = self.objects.get(f"/api/v1/namespaces/{ns}")
        if namespace is None:
            raise NotFound(f'POST {path}: HTTP 404 Not Found: namespaces "{ns}" not found')
        if namespace["metadata"].get("deletionTimestamp"):
            why = f"unable to create new content in namespace {ns} because it is being terminated"
            raise Forbidden(f"POST {path}: HTTP 403 Forbidden: {why}")
        labels = namespace["metadata"].get("labels") or {}
        for config_path, config in sorted(self.objects.items()):
            for hook in config.get("webhooks") or [] if config_path.startswith(WEBHOOKS) else []:
                selector = hook.get("namespaceSelector") or {}
                assert not selector.get("matchExpressions"), "this fake applies matchLabels only"
                takes = any(
                    {"CREATE", "*"} & set(r["operations"]) and {"pods", "*"} & set(r["resources"])
                    for r in hook["rules"]
                    if {"", "*"} & set(r["apiGroups"])
                )
                picked = all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())
                failed = self.call(hook) if takes and picked else ""
                if failed and hook.get("failurePolicy", "Fail") == "Fail":
                    said = f'Internal error occurred: failed calling webhook "{hook["name"]}": {failed}'
                    raise KubeError(f"POST {path}: HTTP 500 Internal Server Error: {said}", 500)

    def call(self, hook: dict[str, Any]) -> str:
        """Why the webhook cannot be called ("" when it can)."""
        svc = hook["clientConfig"]["service"]
        url = f"https://{svc['name']}.{svc['namespace']}.svc:{svc.get('port', 443)}{svc.get('path', '')}"
        post = f'failed to call webhook: Post "{url}?timeout={hook.get("timeoutSeconds", 10)}s"'
        if f"/api/v1/namespaces/{svc['namespace']}/services/{svc['name']}" not in self.objects:
            return f'{post}: service "{svc["name"]}" not found'
        slices = f"/apis/discovery.k8s.io/v1/namespaces/{svc['namespace']}/endpointslices"
        found = self.get(slices, labelSelector=f"kubernetes.io/service-name={svc['name']}")["items"]
        if not any((ep.get("conditions") or {}).get("ready") for s in found for ep in s.get("endpoints") or []):
            return f'{post}: no endpoints available for service "{svc["name"]}"'
        return ""


def namespace_object(name: str) -> Obj:
    labels = {"kubernetes.io/metadata.name": name, "chaoskit.dev/created-by": "apiserver.admission-webhook-failing"}
    meta = {"name": name, "labels": labels}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta, "status": {"phase": "Active"}}


def test_a_failing_webhook_is_seen_when_the_api_server_refuses_a_pod_in_its_namespace_and_not_before() -> None:
    fault = AdmissionWebhookFailing()
    p = WebhookParams(namespace="chaoskit-webhook")
    plan = fault.plan(CP_NODE, p)
    ns = {object_path(namespace_object(p.namespace)): namespace_object(p.namespace)}
    injected = {**ns, **{object_path(o): o for o in (backend_service(p), webhook_configuration(p))}}
    held = AdmittingKube(injected)
    assert fault.took_effect(env_of(held), plan) and not fault.recovered(env_of(held), plan)
    assert not [path for path in held.objects if "/pods/" in path], "a dry run stores nothing"
    before = AdmittingKube(ns)  # the setup made the namespace; nothing injected
    assert not fault.took_effect(env_of(before), plan) and fault.recovered(env_of(before), plan)
    elsewhere = WebhookParams(namespace="shop")  # the same webhook, scoped to another namespace
    other = {object_path(o): o for o in (backend_service(elsewhere), webhook_configuration(elsewhere))}
    assert not fault.took_effect(env_of(AdmittingKube({**ns, **other})), plan)


def test_a_failing_webhook_is_recovered_once_its_namespace_and_configuration_are_gone_and_not_before() -> None:
    fault = AdmissionWebhookFailing()
    p = WebhookParams(namespace="chaoskit-webhook")
    plan = fault.plan(CP_NODE, p)
    assert fault.recovered(env_of(AdmittingKube({})), plan), "the revert deleted the namespace it made, and the rest"
    config = webhook_configuration(p)
    assert not fault.recovered(env_of(AdmittingKube({object_path(config): config})), plan)


# --- a look that could not be made is no answer ----------------------------------------------------------------------

NO_CONTAINER = "Error response from daemon: No such container: chaoskit-control-plane\n"


def unreachable_node(argv: tuple[str, ...]) -> Completed:
    """A node docker cannot reach: every command fails before its tool runs, saying so on stderr only."""
    return Completed(argv, 1, "", NO_CONTAINER)


class AwayKube(AggregatingKube):
    """An API server that does not answer the metrics API (a timeout, not metrics-server's 503)."""

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        if path.startswith("/apis/metrics.k8s.io/"):
            raise KubeError(f"{method} {path}: timed out")
        return super().request(method, path, body, query)


@pytest.mark.parametrize(
    ("fault", "params", "node", "kube"),
    [
        (ApiServerDown(), NoParams(), CP, FakeKube()),  # curl never ran: nothing printed, not even 000
        (ControllerManagerDown(), NoParams(), CP, FakeKube()),  # pgrep never ran: not "no such process"
        (SchedulerDown(), NoParams(), CP, FakeKube()),
        (ContainerRuntimeUnresponsive(), NoParams(), W, FakeKube()),  # crictl failed, not past its deadline
        (DnsDown(), DnsParams(), CP, dns_services()),  # no lookup made: not "nobody answers"
        (MetricsServerDown(), MetricsServerParams(), CP, AwayKube({}, None)),  # no answer: not the 503
    ],
    ids=["apiserver.down", "controller-manager.down", "scheduler.down", "runtime-unresponsive", "dns.down", "metrics"],
)
def test_an_effect_check_whose_look_fails_is_no_answer_not_a_yes(
    fault: Any, params: Any, node: str, kube: FakeKube
) -> None:
    plan = fault.plan(named(node), params)
    with pytest.raises(ToolError):  # the engine counts it as no answer: inconclusive, never "in effect"
        fault.took_effect(env_of(kube, unreachable_node), plan)
