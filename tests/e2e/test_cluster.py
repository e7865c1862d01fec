"""The cluster chaoskit builds is a working Kubernetes: nodes, scheduling, Services across nodes, metrics, HPA."""

from __future__ import annotations

import json
import subprocess

import pytest

from chaoskit import workloads
from chaoskit.cluster import versions
from chaoskit.components import kube_proxy as kp
from chaoskit.model.kwok import REAL_NODES_SELECTOR
from chaoskit.seams.kube import Kube, KubeError, condition
from chaoskit.seams.nodecontainers import CLUSTER_LABEL as KIND_CLUSTER
from chaoskit.seams.nodecontainers import ROLE_LABEL as KIND_ROLE
from chaoskit.seams.nodeexec import DockerNodeExec, named
from chaoskit.seams.shell import SubprocessRunner
from tests.e2e.conftest import chaoskit
from tests.e2e.radius import WATCHES_CLUSTER, WORKLOAD, namespace, touches


def _workers(kube: Kube) -> list[str]:
    nodes = kube.get("/api/v1/nodes", labelSelector=REAL_NODES_SELECTOR)["items"]  # kind's containers, no kwok node
    return sorted(
        n["metadata"]["name"]
        for n in nodes
        if "node-role.kubernetes.io/control-plane" not in n["metadata"].get("labels", {})
    )


def _ready_pods(kube: Kube, ns: str, app: str) -> list[dict]:
    pods = kube.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=f"app={app}")["items"]
    return [p for p in pods if condition(p, "Ready")]


@touches(WATCHES_CLUSTER)
def test_three_nodes_are_ready_at_the_pinned_version(kube: Kube) -> None:
    nodes = kube.get("/api/v1/nodes", labelSelector=REAL_NODES_SELECTOR)["items"]  # simulated ones run no kubelet
    assert len(nodes) == 3
    assert all(condition(n, "Ready") for n in nodes), [
        n["metadata"]["name"] for n in nodes if not condition(n, "Ready")
    ]
    assert {n["status"]["nodeInfo"]["kubeletVersion"] for n in nodes} == {versions.KUBERNETES}
    assert len(_workers(kube)) == 2


@touches()
@pytest.mark.parametrize("node", ["chaoskit-control-plane", "chaoskit-worker", "chaoskit-worker2"])
def test_a_node_answers_a_burst_of_dns_queries_through_its_relay(node: str) -> None:
    """Each node resolves through its own address (pods inherit it) relayed to Docker's resolver: 100 lookups at
    once must all be answered (a relay that lost concurrent queries left a node's kubelet unable to reach the API)."""
    burst = (
        "for i in $(seq 1 100); do (getent hosts chaoskit-control-plane >/dev/null && echo ok || echo lost) & "
        "done; wait"
    )
    out = DockerNodeExec(SubprocessRunner()).run(named(node), ["bash", "-c", burst], timeout=60).stdout.split()
    assert out.count("ok") == 100, f"{out.count('lost')} of 100 lookups lost on {node}"


@touches(WATCHES_CLUSTER)
def test_kube_system_pods_are_all_running(kube: Kube) -> None:
    pods = kube.get("/api/v1/namespaces/kube-system/pods")["items"]
    names = [p["metadata"]["name"] for p in pods]
    for expected in ("coredns", "metrics-server", "chaoskit-netd", "kube-proxy"):
        assert any(n.startswith(expected) for n in names), f"no {expected} pod in {sorted(names)}"
    not_ready = [p["metadata"]["name"] for p in pods if not condition(p, "Ready")]
    assert not not_ready


@touches(namespace("e2e-workload-pods", "watches"), WORKLOAD)
def test_workload_pods_land_on_both_workers(kube: Kube, ns: str) -> None:
    kube.apply(workloads.web_deployment(ns, replicas=4))
    kube.wait("4 ready web pods", lambda: len(_ready_pods(kube, ns, "web")) == 4, 120)
    assert {p["spec"]["nodeName"] for p in _ready_pods(kube, ns, "web")} == set(_workers(kube))


@touches(WATCHES_CLUSTER)
def test_cluster_ip_service_answers_from_a_pod_on_another_node(kube: Kube, ns: str) -> None:
    server_node, client_node = _workers(kube)
    web = workloads.web_deployment(ns)
    web["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": server_node}
    kube.apply(web)
    kube.apply(workloads.service(ns))
    kube.apply(workloads.client_pod(ns, "client", node=client_node))
    kube.wait("web ready", lambda: _ready_pods(kube, ns, "web"), 120)
    kube.wait(
        "client running",
        lambda: kube.get(f"/api/v1/namespaces/{ns}/pods/client")["status"].get("phase") == "Running",
        120,
    )
    svc = kube.get(f"/api/v1/namespaces/{ns}/services/web")
    web_pod = _ready_pods(kube, ns, "web")[0]["metadata"]["name"]
    # by ClusterIP (kube-proxy's rules) and by name (CoreDNS, then kube-proxy)
    for url in (f"http://{svc['spec']['clusterIP']}/", f"http://web.{ns}.svc.cluster.local/"):
        answers: list[str] = []

        def answered(url: str = url, answers: list[str] = answers) -> bool:
            code, out = kube.exec(ns, "client", ["/workload", "get", "-timeout", "3s", url])
            answers.append(out.strip())
            return code == 0

        # a just-ready endpoint reaches kube-proxy's rules after a sync (about a second): allow for it
        try:
            kube.wait(f"{url} to answer from {client_node}", answered, 30, interval=0.5)
        except KubeError as exc:
            raise AssertionError(f"{exc}\n{_dataplane(kube, ns, [server_node, client_node])}") from exc
        assert answers[-1] == web_pod, answers


def _dataplane(kube: Kube, ns: str, nodes: list[str]) -> str:
    """What a failed Service request needs looked at: the web endpoints, and each node's routes and Service rules."""
    nodes_exec = DockerNodeExec(SubprocessRunner())
    slices = kube.get(f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices")["items"]
    lines = [f"endpoints: {[e.get('addresses') for s in slices for e in s.get('endpoints') or []]}"]
    for node in nodes:
        routes = (
            nodes_exec.run(named(node), ["ip", "route"], check=False, timeout=10).stdout.strip().replace("\n", "; ")
        )
        lines.append(f"{node}: {kp.service_rules(nodes_exec, named(node))} Service rules; routes: {routes}")
    return "\n".join(lines)


@touches(WATCHES_CLUSTER)
def test_metrics_api_returns_node_and_pod_metrics(kube: Kube) -> None:
    nodes = kube.wait("node metrics", lambda: kube.get("/apis/metrics.k8s.io/v1beta1/nodes")["items"], 90)
    assert len(nodes) == 3
    assert all("cpu" in n["usage"] and "memory" in n["usage"] for n in nodes)
    pods = kube.wait(
        "pod metrics", lambda: kube.get("/apis/metrics.k8s.io/v1beta1/namespaces/kube-system/pods")["items"], 90
    )
    assert any(p["metadata"]["name"].startswith("kube-apiserver") for p in pods)


@touches(WATCHES_CLUSTER)
def test_status_reports_three_ready_nodes_as_json(cluster: str) -> None:
    done = chaoskit("cluster", "status", "--cluster", cluster, "-o", "json")
    assert done.returncode == 0, done.stderr
    st = json.loads(done.stdout)
    assert st["exists"] and st["docker"]
    assert [n["ready"] for n in st["nodes"]] == [True, True, True]
    assert st["api_server"] == "ok"


def test_up_on_an_existing_cluster_reuses_it(cluster: str) -> None:
    done = chaoskit("cluster", "up", "--cluster", cluster)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "reused" in done.stdout


# unmarked, so alone: its `kind delete` rewrites the kubeconfig every other test reads
def test_down_leaves_no_containers_and_a_second_down_is_fine(cluster: str) -> None:
    # what is tested is `down` (making a cluster with `cluster up` is what every CI run starts with): a cluster as
    # `down` finds one, by kind's labels on its node containers, here two idle containers of the session's node image
    # (a kubeadm init of its own would only add half a minute)
    name = "chaoskit-e2e-down"
    image = subprocess.run(
        ["docker", "inspect", "-f", "{{.Config.Image}}", f"{cluster}-control-plane"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        for role in ("control-plane", "worker"):
            subprocess.run(
                [
                    "docker",
                    "run",
                    "-d",
                    "--name",
                    f"{name}-{role}",
                    "--label",
                    f"{KIND_CLUSTER}={name}",
                    "--label",
                    f"{KIND_ROLE}={role}",
                    "--entrypoint",
                    "sleep",
                    image,
                    "infinity",
                ],
                capture_output=True,
                text=True,
                check=True,
            )
        assert json.loads(chaoskit("cluster", "status", "--cluster", name, "-o", "json").stdout)["exists"] is True
    finally:
        down = chaoskit("cluster", "down", "--cluster", name)
    assert down.returncode == 0, down.stderr
    left = chaoskit("cluster", "status", "--cluster", name, "-o", "json")
    assert json.loads(left.stdout)["exists"] is False
    ps = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={KIND_CLUSTER}={name}"], capture_output=True, text=True
    )
    assert ps.stdout.strip() == ""
    again = chaoskit("cluster", "down", "--cluster", name)
    assert again.returncode == 0
    assert "does not exist" in again.stdout
