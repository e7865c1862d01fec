"""The peers' own problems, reproduced on the kind cluster: the Kubernetes-platform problems of SREGym, ITBench and
AIOpsLab (and their no-fault controls) that run on 3 kind nodes offline, each a small declarative record — how to
break it with kubectl and `docker exec` (nothing of chaoskit's), how to put it back, the root-cause entities as
chaoskit names them, and the victims a diagnosis must not blame — scored as ITBench-AA scores an agent.

Used by `bench/peer_problems.py` (every problem, a table) and `tests/e2e/test_peer_problems.py` (one per class).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chaoskit.cluster.images import WORKLOAD_IMAGE

CLUSTER = os.environ.get("CHAOSKIT_CLUSTER", "chaoskit")
CONTEXT = f"kind-{CLUSTER}"
KUBECTL = os.path.expanduser("~/.cache/chaoskit/bin/kubectl")
NS = "$NS"  # each problem's own namespace (peer-<name>), made before and deleted after: several can stand at once
CP, W1, W2 = f"{CLUSTER}-control-plane", f"{CLUSTER}-worker", f"{CLUSTER}-worker2"


@dataclass(frozen=True)
class Problem:
    name: str
    suite: str  # SREGym, ITBench, AIOpsLab
    klass: str  # what kind of diagnosis it asks for (the e2e test takes one of each)
    roots: frozenset[str]  # the root-cause entities, as chaoskit names them (kind/namespace/name)
    inject: tuple[str, ...]  # shell lines; $K is kubectl for the cluster
    revert: tuple[str, ...] = ()
    victims: frozenset[str] = frozenset()  # entities hurt by it, never to be named as its cause
    settle_s: float = 45.0  # how long the symptom takes to show (a Pending pod counts after 30 s)
    manifests: tuple[Mapping[str, Any], ...] = ()  # applied into NS before `inject`
    skip: str = ""  # why it is not reproduced here
    wait_ready: bool = True  # its app becomes Ready before the break (not so for an app broken from the start)

    @property
    def ns(self) -> str:
        return f"peer-{self.name}"[:63]

    def here(self, text: str) -> str:
        """`text` with the problem's own namespace in place of $NS."""
        return text.replace(NS, self.ns)

    @property
    def entities(self) -> frozenset[str]:
        return frozenset(self.here(e) for e in self.roots)

    @property
    def blameless(self) -> frozenset[str]:
        return frozenset(self.here(e) for e in self.victims)


def deployment(name: str = "web", replicas: int = 2, **pod: Any) -> dict[str, Any]:
    """chaoskit's web workload (an image the cluster has offline) as the problem's app, with `pod` spec overrides."""
    container: dict[str, Any] = {
        "name": "app",
        "image": WORKLOAD_IMAGE,
        "imagePullPolicy": "Never",
        "args": ["serve", "-addr", ":8080"],
        "ports": [{"containerPort": 8080}],
        "resources": {"requests": {"cpu": "20m", "memory": "16Mi"}},
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8080}, "periodSeconds": 2},
    }
    container.update(pod.pop("container", {}))
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container], "terminationGracePeriodSeconds": 1, **pod},
            },
        },
    }


def service(name: str = "web", target: int = 8080) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": target}]},
    }


def hpa(target: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": 1,
            "maxReplicas": 4,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
                }
            ],
        },
    }


APP = (deployment(), service())
WEB = f"deployment/{NS}/web"
SVC = f"service/{NS}/web"
PINNED: dict[str, Any] = {"nodeSelector": {"kubernetes.io/hostname": W2}}
NO_REQUESTS: dict[str, Any] = {"container": {"resources": {}}}
ELSEWHERE = json.dumps({"spec": {"template": {"spec": {"nodeSelector": {"kubernetes.io/hostname": "extra-node"}}}}})
EVICTION = "sed -i 's/^  nodefs.available: .*/  nodefs.available: {}%/' /var/lib/kubelet/config.yaml"
REPLACE_PODS = f"$K -n {NS} delete pod -l app=web --wait=false"  # NoSchedule keeps what runs: new pods meet it
RESTART_DNS = "$K -n kube-system rollout restart deploy coredns && $K -n kube-system rollout status deploy coredns"
COREFILE_NXDOMAIN = "template IN ANY cluster.local {\\n        rcode NXDOMAIN\\n    }\\n    kubernetes"


# ITBench's request surge: one client floods the API server; API Priority and Fairness gives the clients its FlowSchema
# matches one small priority level that rejects what it cannot serve (HTTP 429)
FLOWCONTROL = "flowcontrol.apiserver.k8s.io/v1"
SURGE: tuple[dict[str, Any], ...] = (
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "flooder", "namespace": NS}},
    {
        "apiVersion": FLOWCONTROL,
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": NS},
        # no seats of its own and none borrowed: each of the flood's requests is rejected at once (HTTP 429)
        "spec": {
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": 0,
                "borrowingLimitPercent": 0,
                "limitResponse": {"type": "Reject"},
            },
        },
    },
    {
        "apiVersion": FLOWCONTROL,
        "kind": "FlowSchema",
        "metadata": {"name": NS},
        "spec": {
            "priorityLevelConfiguration": {"name": NS},
            "matchingPrecedence": 500,
            "rules": [
                {
                    "subjects": [{"kind": "ServiceAccount", "serviceAccount": {"namespace": NS, "name": "flooder"}}],
                    "resourceRules": [
                        {
                            "verbs": ["*"],
                            "apiGroups": ["*"],
                            "resources": ["*"],
                            "clusterScope": True,
                            "namespaces": ["*"],
                        }
                    ],
                }
            ],
        },
    },
)
# the flood: the admin's client certificate impersonating the service account, 300 requests 30 at a time, again and
# again (curl is light enough that the flood, not its client, is what the host spends)
CREDENTIALS = (
    "$K config view --raw --minify -o jsonpath='{.users[0].user.client-certificate-data}' | base64 -d > /tmp/$NS.crt"
    " && $K config view --raw --minify -o jsonpath='{.users[0].user.client-key-data}' | base64 -d > /tmp/$NS.key"
)
FLOOD = (
    "server=$($K config view --minify -o jsonpath='{.clusters[0].cluster.server}'); "
    'urls=$(for i in $(seq 300); do echo "$server/api/v1/pods?flooder=$i"; done); '
    f"while :; do curl -sk --cert /tmp/{NS}.crt --key /tmp/{NS}.key "
    f"-H 'Impersonate-User: system:serviceaccount:{NS}:flooder' --parallel --parallel-max 30 -o /dev/null $urls; "
    "sleep 0.5; done"
)


PROBLEMS: tuple[Problem, ...] = (
    # SREGym's Kubernetes-platform problems
    Problem(
        "kubelet-crash",
        "SREGym",
        "node-component",
        frozenset({f"kubelet/{W2}"}),
        (f"docker exec {W2} systemctl stop kubelet",),
        (f"docker exec {W2} systemctl start kubelet",),
        victims=frozenset({WEB, SVC}),
        settle_s=10,
        manifests=APP,
    ),
    Problem(
        "service-dns-failure",
        "SREGym",
        "dns",
        frozenset({"deployment/kube-system/coredns"}),
        ("$K -n kube-system scale deployment coredns --replicas=0",),
        ("$K -n kube-system scale deployment coredns --replicas=2",),
        victims=frozenset({"service/kube-system/kube-dns"}),
        settle_s=10,
    ),
    Problem(
        "stale-coredns-config",
        "SREGym",
        "dns",
        frozenset({"configmap/kube-system/coredns"}),
        (
            "$K -n kube-system get configmap coredns -o jsonpath='{.data.Corefile}' > /tmp/$NS-Corefile.orig",
            "$K -n kube-system get configmap coredns -o jsonpath='{.data.Corefile}' "
            f"| sed 's/^    kubernetes/    {COREFILE_NXDOMAIN}/' > /tmp/$NS-Corefile",
            "$K -n kube-system create configmap coredns --from-file=Corefile=/tmp/$NS-Corefile --dry-run=client"
            " -o yaml | $K apply -f -",
            RESTART_DNS,
        ),
        (
            "$K -n kube-system create configmap coredns --from-file=Corefile=/tmp/$NS-Corefile.orig --dry-run=client"
            " -o yaml | $K apply -f -",
            RESTART_DNS,
        ),
        victims=frozenset({"deployment/kube-system/coredns", "service/kube-system/kube-dns"}),
        settle_s=5,
    ),
    Problem(
        "admission-webhook-outage",
        "SREGym",
        "admission",
        frozenset({f"validatingwebhookconfiguration/{NS}-policy"}),
        ("$K apply -f /tmp/$NS-webhook.json", f"$K -n {NS} delete pod -l app=web --wait=false"),
        ("$K delete validatingwebhookconfiguration $NS-policy --ignore-not-found",),
        victims=frozenset({WEB}),
        settle_s=20,
        manifests=APP,
    ),
    Problem(
        "rbac-misconfiguration",
        "SREGym",
        "rbac",
        frozenset({"clusterrolebinding/system:controller:replicaset-controller"}),
        (
            "$K delete clusterrolebinding system:controller:replicaset-controller",
            f"$K -n {NS} scale deployment web --replicas=3",
        ),
        (
            "$K create clusterrolebinding system:controller:replicaset-controller"
            " --clusterrole=system:controller:replicaset-controller --serviceaccount=kube-system:replicaset-controller"
            " --dry-run=client -o yaml | $K apply -f -",
        ),
        victims=frozenset({WEB}),
        settle_s=20,
        manifests=APP,
    ),
    Problem(
        "kube-proxy-rbac",
        "SREGym",
        "rbac-node-component",
        frozenset({"clusterrolebinding/kubeadm:node-proxier"}),
        (
            "$K delete clusterrolebinding kubeadm:node-proxier",
            f"$K -n kube-system delete pod -l k8s-app=kube-proxy --field-selector spec.nodeName={W1}",
        ),
        (
            "$K create clusterrolebinding kubeadm:node-proxier --clusterrole=system:node-proxier"
            " --serviceaccount=kube-system:kube-proxy --dry-run=client -o yaml | $K apply -f -",
            f"$K -n kube-system delete pod -l k8s-app=kube-proxy --field-selector spec.nodeName={W1}",
            "$K -n kube-system wait pod -l k8s-app=kube-proxy --for=condition=Ready --timeout=60s",
        ),
        victims=frozenset({"component/kube-proxy", f"kube-proxy/{W1}"}),
        settle_s=20,
    ),
    Problem(  # SREGym's RBAC misconfiguration, on the scheduler's identity (ours: a 403 for every component)
        "scheduler-rbac",
        "variant",
        "rbac-control-plane",
        frozenset({"clusterrolebinding/system:kube-scheduler"}),
        (
            "$K delete clusterrolebinding system:kube-scheduler",
            f"docker exec {CP} pkill -x kube-scheduler",  # a running one keeps its watches: a new one lists
            f"$K -n {NS} scale deployment web --replicas=3",
        ),
        (
            "$K create clusterrolebinding system:kube-scheduler --clusterrole=system:kube-scheduler"
            " --user=system:kube-scheduler --dry-run=client -o yaml | $K apply -f -",
        ),
        victims=frozenset({WEB, "component/scheduler", f"scheduler/{CP}"}),
        settle_s=40,
        manifests=APP,
    ),
    Problem(
        "hpa-without-cpu-request",
        "SREGym",
        "scheduling-by-object",
        frozenset({WEB}),
        (),
        victims=frozenset({"component/metrics-server", f"horizontalpodautoscaler/{NS}/web"}),
        settle_s=75,
        manifests=(deployment(**NO_REQUESTS), service(), hpa()),
    ),
    Problem(
        "taint-without-toleration",
        "SREGym",
        "scheduling-by-object",
        frozenset({f"node/{W2}", WEB}),
        (f"$K taint node {W2} peer.example/dedicated=ops:NoSchedule", REPLACE_PODS),
        (f"$K taint node {W2} peer.example/dedicated-",),
        settle_s=15,
        manifests=(deployment(**PINNED), service()),
    ),
    Problem(
        "crash-loop",
        "SREGym",
        "crash-loop",
        frozenset({WEB}),
        (),
        victims=frozenset({SVC}),
        settle_s=50,
        manifests=(deployment(container={"args": ["serve", "-addr", "not-a-port"]}), service()),
        wait_ready=False,
    ),
    # ITBench's
    Problem(
        "cordoned-node-pinned-workload",
        "ITBench",
        "scheduling-by-object",
        frozenset({f"node/{W2}", WEB}),
        (f"$K cordon {W2}", REPLACE_PODS),
        (f"$K uncordon {W2}",),
        victims=frozenset({SVC, "component/scheduler"}),
        settle_s=15,
        manifests=(deployment(**PINNED), service()),
    ),
    Problem(
        "misconfigured-hpa",
        "ITBench",
        "scheduling-by-object",
        frozenset({f"horizontalpodautoscaler/{NS}/web"}),
        (),
        victims=frozenset({WEB}),
        settle_s=75,
        manifests=(*APP, hpa("web-typo")),
    ),
    Problem(
        "resource-quota",
        "ITBench",
        "scheduling-by-object",
        frozenset({f"resourcequota/{NS}/pods"}),
        (f"$K -n {NS} create quota pods --hard=pods=2", f"$K -n {NS} scale deployment web --replicas=4"),
        victims=frozenset({WEB, "component/controller-manager"}),
        settle_s=15,
        manifests=APP,
    ),
    Problem(
        "non-existent-node",
        "ITBench",
        "scheduling-by-object",
        frozenset({WEB}),
        (),
        settle_s=15,
        manifests=(deployment(nodeSelector={"kubernetes.io/hostname": "no-such-node"}), service()),
        wait_ready=False,
    ),
    Problem(
        "anti-affinity",
        "ITBench",
        "scheduling-by-object",
        frozenset({WEB}),
        (),
        settle_s=15,
        manifests=(
            deployment(
                replicas=4,
                affinity={
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
                        ]
                    }
                },
            ),
            service(),
        ),
        wait_ready=False,
    ),
    Problem(
        "api-server-request-surge",
        "ITBench",
        "apf",
        frozenset({f"flowschema/{NS}", f"serviceaccount/{NS}/flooder"}),
        (CREDENTIALS, f"setsid bash -c {shlex.quote(FLOOD)} >/dev/null 2>&1 < /dev/null &", "sleep 3"),
        (
            f"pkill -f 'flooder='; rm -f /tmp/{NS}.crt /tmp/{NS}.key",
            f"$K delete flowschema {NS} --ignore-not-found",
            f"$K delete prioritylevelconfiguration {NS} --ignore-not-found",
        ),
        victims=frozenset({"component/apiserver"}),
        settle_s=0,
        manifests=SURGE,
    ),
    Problem("priority-preemption", "ITBench", "scheduling-by-object", frozenset(), (), skip="not reproduced yet"),
    # AIOpsLab's
    Problem(
        "wrong-target-port",
        "AIOpsLab",
        "service",
        frozenset({SVC}),
        (),
        victims=frozenset({WEB}),
        settle_s=10,
        manifests=(deployment(), service(target=9999)),
    ),
    Problem(
        "scaled-to-zero",
        "AIOpsLab",
        "service",
        frozenset({WEB}),
        (f"$K -n {NS} scale deployment web --replicas=0",),
        victims=frozenset({SVC}),
        settle_s=35,
        manifests=APP,
    ),
    Problem(
        "assign-non-existent-node",
        "AIOpsLab",
        "scheduling-by-object",
        frozenset({WEB}),
        (f"$K -n {NS} patch deployment web -p {shlex.quote(ELSEWHERE)}",),
        settle_s=15,
        manifests=APP,
    ),
    Problem("noop-healthy-app", "AIOpsLab", "control", frozenset(), (), settle_s=5, manifests=APP),
    Problem("noop-idle-cluster", "AIOpsLab", "control", frozenset(), (), settle_s=0),
    # skipped, with the reason
    Problem(
        "wrong-dns-policy", "SREGym", "dns", frozenset(), (), skip="needs the application's own lookups from its pods"
    ),
    Problem("webhook-tls-mismatch", "SREGym", "admission", frozenset(), (), skip="not reproduced yet"),
    Problem(
        "kubelet-eviction-threshold",
        "SREGym",
        "node-condition",
        frozenset({f"node/{W2}"}),
        (f"docker exec {W2} sh -c {shlex.quote(EVICTION.format(99) + ' && systemctl restart kubelet')}",),
        (f"docker exec {W2} sh -c {shlex.quote(EVICTION.format(10) + ' && systemctl restart kubelet')}",),
        victims=frozenset({WEB}),
        settle_s=30,
        manifests=APP,
    ),
    Problem(
        "psa-restricted",
        "SREGym",
        "admission",
        frozenset({f"namespace/{NS}"}),
        (
            f"$K label namespace {NS} pod-security.kubernetes.io/enforce=restricted --overwrite",
            f"$K -n {NS} delete pod -l app=web --wait=false",
        ),
        victims=frozenset({WEB, "component/controller-manager"}),
        settle_s=20,
        manifests=APP,
    ),
)


def webhook_config() -> dict[str, Any]:
    """A validating webhook for pods of NS, failurePolicy Fail, whose Service has no backend: every pod refused."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": f"{NS}-policy"},
        "webhooks": [
            {
                "name": "policy.peer.example.com",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Fail",
                "timeoutSeconds": 2,
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
                "clientConfig": {"service": {"namespace": NS, "name": "policy", "port": 443}},
            }
        ],
    }


# running one


def sh(line: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    k = f"{shlex.quote(KUBECTL)} --context {CONTEXT}"
    return subprocess.run(
        ["bash", "-c", line.replace("$K", k)], capture_output=True, text=True, timeout=timeout, check=False
    )


def kubectl_apply(objs: Iterable[Mapping[str, Any]]) -> None:
    doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)})
    done = subprocess.run(
        [KUBECTL, "--context", CONTEXT, "apply", "-f", "-"], input=doc, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise RuntimeError(f"kubectl apply: {done.stderr.strip()}")


def set_up(p: Problem) -> None:
    """The problem's namespace and app, Ready, then the break."""
    sh(f"$K create namespace {p.ns} 2>/dev/null; true")
    if p.manifests:
        kubectl_apply(json.loads(p.here(json.dumps(list(p.manifests)))))
    with open(f"/tmp/{p.ns}-webhook.json", "w") as f:
        f.write(p.here(json.dumps(webhook_config())))


def ready(p: Problem) -> None:
    if p.manifests and p.wait_ready:
        sh(f"$K -n {p.ns} rollout status deployment --timeout=60s", timeout=90)


def inject(p: Problem) -> None:
    for line in p.inject:
        done = sh(p.here(line))
        if done.returncode:
            raise RuntimeError(f"inject {line!r}: {done.stderr.strip()[-300:]}")


def tear_down(p: Problem) -> list[str]:
    """Put everything back; what could not be is said."""
    errors = [
        f"{line}: {d.stderr.strip()[-200:]}" for line in p.revert if (d := sh(p.here(line), timeout=180)).returncode
    ]
    sh(f"$K delete namespace {p.ns} --ignore-not-found --wait=true --timeout=120s", timeout=150)
    return errors


def diagnose() -> tuple[dict[str, Any], float]:
    """`chaoskit diagnose -o json`, as a user runs it; the document and its wall time."""
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "chaoskit", "diagnose", "--cluster", CLUSTER, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    took = time.monotonic() - t0
    return json.loads(done.stdout)["diagnosis"], took


# scoring, as ITBench-AA does


def named_roots(diagnosis: Mapping[str, Any]) -> set[str]:
    """The entities a diagnosis names as root causes: every judged warning or critical finding nothing else explains;
    a process's finding names its component on its node (kubelet/NODE)."""
    out: set[str] = set()
    for r in diagnosis["reports"]:
        for f in r["findings"]:
            if f["severity"] == "info" or f.get("caused_by") or f["title"] == "Evidence could not be collected":
                continue
            entities = [e for e in (f.get("entity"), *(f.get("co_causes") or ())) if e]
            out.update(entities or [f"{f['component']}/{r['subject']}"])
    return out


@dataclass(frozen=True)
class Score:
    recall: float
    precision: float
    named: frozenset[str] = field(default_factory=frozenset)
    victims_blamed: frozenset[str] = field(default_factory=frozenset)

    @property
    def aa(self) -> float:
        """ITBench-AA: a case counts only when every root-cause entity is named, and then by precision."""
        return self.precision if self.recall == 1.0 else 0.0


def score(roots: frozenset[str], named: Iterable[str], victims: frozenset[str] = frozenset()) -> Score:
    said = frozenset(named)
    if not roots:  # a no-fault control: full marks only for naming nothing
        return Score(1.0, 1.0 if not said else 0.0, said)
    hit = roots & said
    return Score(len(hit) / len(roots), len(hit) / len(said) if said else 0.0, said, victims & said)


def broken(problems: Sequence[Problem]) -> None:
    """Every problem set up side by side (their apps Ready), then each broken."""
    for p in problems:
        set_up(p)
    for p in problems:
        ready(p)
    for p in problems:
        inject(p)


def run(p: Problem) -> tuple[Score, float, dict[str, Any], list[str]]:
    try:
        broken([p])
        time.sleep(p.settle_s)
        doc, took = diagnose()
    finally:
        errors = tear_down(p)
    return score(p.entities, named_roots(doc), p.blameless), took, doc, errors


def runnable(problems: Sequence[Problem] = PROBLEMS) -> list[Problem]:
    return [p for p in problems if not p.skip]
