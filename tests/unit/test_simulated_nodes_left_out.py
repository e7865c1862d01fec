"""Simulated nodes (kwok's) beside real ones: what execs into nodes or scrapes them leaves them out, what judges the
nodes as the control plane does sees them and says they are simulated."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ruamel.yaml import YAML

from chaoskit.checks.cluster import NodesReady
from chaoskit.checks.slo import ScalabilitySlos, SloParams
from chaoskit.cluster import install, up
from chaoskit.cluster import prometheus as prom
from chaoskit.cluster.assets import images_dir
from chaoskit.components.kube_proxy import proxied_nodes
from chaoskit.diagnosers.kit.controllers import nodes_not_marked_lost
from chaoskit.env import Env
from chaoskit.faults.kube_proxy import _every_proxy_left
from chaoskit.faults.metrics_server import metrics_answer
from chaoskit.model.kwok import REAL_NODES_SELECTOR
from chaoskit.model.params import NoParams
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodecontainers import ROLE_LABEL
from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.seams.shell import FakeRunner


def _node(name: str, ip: str | None, *, simulated: bool = False, ready: str = "True") -> dict[str, Any]:
    labels = {"type": "kwok", "kubernetes.io/role": "agent"} if simulated else {}
    if name.endswith("control-plane"):
        labels["node-role.kubernetes.io/control-plane"] = ""
    addresses = [{"type": "InternalIP", "address": ip}] if ip else []  # kwok's nodes have no address at all
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": "1970-01-12T13:45:00Z"},
        "spec": {},
        "status": {"addresses": addresses, "conditions": [{"type": "Ready", "status": ready}]},
    }


REAL = [_node("chaoskit-control-plane", "172.18.0.2"), _node("chaoskit-worker", "172.18.0.3")]


def _kube(*simulated: dict[str, Any]) -> FakeKube:
    """Nodes stored one by one, so a list applies its labelSelector as the API server would."""
    return FakeKube({f"/api/v1/nodes/{n['metadata']['name']}": n for n in (*REAL, *simulated)})


def test_kube_proxy_is_looked_for_on_real_nodes_only() -> None:
    assert proxied_nodes(_kube(_node("kwok-node-0", None, simulated=True))) == [
        Node("chaoskit-control-plane", "control-plane"),
        Node("chaoskit-worker", "worker"),
    ]


def test_the_agents_are_reached_on_real_nodes_only_though_a_simulated_node_has_no_address() -> None:
    nodes = install.agent_nodes(_kube(_node("kwok-node-0", None, simulated=True)))
    assert [n.name for n in nodes] == ["chaoskit-control-plane", "chaoskit-worker"]


def test_prometheus_scrapes_no_simulated_node_even_one_with_an_address() -> None:
    nodes = prom.cluster_nodes(_kube(_node("kwok-node-0", "10.9.9.9", simulated=True)))
    assert [n.name for n in nodes] == ["chaoskit-control-plane", "chaoskit-worker"]


def test_the_metrics_api_answers_when_every_real_node_has_a_sample() -> None:
    kube = _kube(_node("kwok-node-0", None, simulated=True), _node("kwok-node-1", None, simulated=True))
    kube.objects["/apis/metrics.k8s.io/v1beta1/nodes"] = {"items": [{"metadata": {"name": n}} for n in ("a", "b")]}
    assert metrics_answer(Env(kube, FakeNodeExec(), "chaoskit")) is True
    kube.objects["/apis/metrics.k8s.io/v1beta1/nodes"] = {"items": [{"metadata": {"name": "a"}}]}
    assert metrics_answer(Env(kube, FakeNodeExec(), "chaoskit")) is False


def test_nodes_ready_judges_simulated_nodes_and_names_them_so() -> None:
    env = Env(_kube(_node("kwok-node-0", None, simulated=True, ready="Unknown")), FakeNodeExec(), "chaoskit")
    out = NodesReady().run(env, NoParams())
    assert not out.ok and out.detail == "not Ready: kwok-node-0 (simulated by kwok)"


def test_a_simulated_node_left_ready_without_heartbeats_is_named_as_simulated() -> None:
    lost = nodes_not_marked_lost([_node("kwok-node-3", None, simulated=True)], [], 1_000_000.0, 40)
    assert lost == ["node kwok-node-3 (simulated by kwok): no heartbeat for 100s, still Ready and untainted"]


def test_slow_sync_waits_for_the_kube_proxies_of_real_nodes_only() -> None:
    assert f"get nodes -l '{REAL_NODES_SELECTOR}' -o" in _every_proxy_left("10s")


def test_cluster_up_waits_for_real_nodes_and_their_kube_proxies_only() -> None:
    ps = json.dumps(
        {"Names": "chaoskit-control-plane", "Labels": f"{ROLE_LABEL}=control-plane", "Image": "i", "State": "running"}
    )
    runner = FakeRunner({("docker", "ps"): ps + "\n", ("docker", "exec"): '{"items": []}'})
    up.kube_proxy_problems(runner, "chaoskit")
    up.readiness_problems(runner, "chaoskit")
    listed = [c for c in runner.calls if "nodes" in c]
    assert len(listed) == 2 and all(c[c.index("nodes") :][1:3] == ("-l", REAL_NODES_SELECTOR) for c in listed)


def test_the_scalability_slos_read_the_kubelets_of_real_nodes_only() -> None:
    kube = _kube(_node("kwok-node-0", None, simulated=True))
    kube.raw_paths = {"/metrics": "", **{f"/api/v1/nodes/{n['metadata']['name']}/proxy/metrics": "" for n in REAL}}
    params = SloParams(window=0.01, nodes="!node-role.kubernetes.io/control-plane")
    out = ScalabilitySlos().run(Env(kube, FakeNodeExec(), "chaoskit"), params)
    scraped = [path for _, path in kube.calls if path.endswith("/proxy/metrics")]
    assert scraped == ["/api/v1/nodes/chaoskit-worker/proxy/metrics"] * 2 and "not read" not in out.detail


def test_metrics_server_scrapes_the_nodes_the_one_place_calls_real() -> None:
    docs = YAML(typ="safe").load_all((images_dir() / "addons" / "metrics-server.yaml").read_text())
    (deployment,) = [d for d in docs if d and d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert f"--node-selector={REAL_NODES_SELECTOR}" in container["args"]


def test_the_pod_network_routes_to_real_nodes_only() -> None:
    source = (images_dir() / "netd" / "main.go").read_text()
    (path,) = re.findall(r'nodesPath = "([^"]+)"', source)
    assert parse_qs(urlsplit(path).query) == {"labelSelector": [REAL_NODES_SELECTOR]}
