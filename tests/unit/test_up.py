"""chaoskit.cluster.up: choosing the node image, and reading readiness through the fake runner."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import pytest

from chaoskit.cluster import up, versions
from chaoskit.seams.shell import FakeRunner


@pytest.fixture
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """urllib honours *_proxy variables; the probes below must reach 127.0.0.1 directly."""
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def unauthorized_registry() -> Iterator[str]:
    """A local HTTP server answering 401, like registry-1.docker.io/v2/ does without a token."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v2/"
    server.shutdown()
    server.server_close()


@pytest.mark.usefixtures("no_proxy")
def test_registry_is_unreachable_when_nothing_listens() -> None:
    assert up.registry_reachable("http://127.0.0.1:9/", timeout=1) is False


@pytest.mark.usefixtures("no_proxy")
def test_registry_answering_401_counts_as_reachable(unauthorized_registry: str) -> None:
    assert up.registry_reachable(unauthorized_registry, timeout=1) is True


# choose_node_image takes no probe parameter, so the probe is replaced on the module.
def test_auto_picks_the_stock_image_when_a_registry_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(up, "registry_reachable", lambda: True)
    assert up.choose_node_image("auto") == versions.STOCK_NODE_IMAGE


def test_auto_builds_the_node_image_when_no_registry_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(up, "registry_reachable", lambda: False)
    assert up.choose_node_image("auto") == "build"


@pytest.mark.parametrize("ref", ["build", "kindest/node:v1.34.0", versions.STOCK_NODE_IMAGE, "chaoskit/node:dev"])
def test_explicit_node_image_is_passed_through_without_probing(monkeypatch: pytest.MonkeyPatch, ref: str) -> None:
    def probe() -> bool:
        raise AssertionError("an explicit image must not probe the network")

    monkeypatch.setattr(up, "registry_reachable", probe)
    assert up.choose_node_image(ref) == ref


# --- readiness through node_kubectl ------------------------------------------------------------

PS_LINE = json.dumps(
    {
        "Names": "chaoskit-control-plane",
        "Image": "kindest/node:v1.34.0",
        "State": "running",
        "Labels": "io.x-k8s.kind.cluster=chaoskit,io.x-k8s.kind.role=control-plane",
    }
)
KUBECTL = ("docker", "exec", "-i", "chaoskit-control-plane", "kubectl", "--kubeconfig=/etc/kubernetes/admin.conf")


def _items(*objs: tuple[str, str]) -> str:
    return json.dumps(
        {
            "items": [
                {"metadata": {"name": name}, "status": {"conditions": [{"type": "Ready", "status": ready}]}}
                for name, ready in objs
            ]
        }
    )


def test_readiness_problems_names_unready_nodes_and_pods() -> None:
    runner = FakeRunner(
        responses={
            ("docker", "ps"): PS_LINE,
            (*KUBECTL, "get", "nodes"): _items(("chaoskit-control-plane", "True"), ("chaoskit-worker", "False")),
            (*KUBECTL, "get", "pods"): _items(("coredns-1", "False")),
        }
    )
    assert up.readiness_problems(runner, "chaoskit") == ["node chaoskit-worker not Ready", "pod coredns-1 not Ready"]


def test_readiness_problems_waits_for_the_metrics_api() -> None:
    runner = FakeRunner(
        responses={
            ("docker", "ps"): PS_LINE,
            (*KUBECTL, "get", "nodes"): _items(("chaoskit-control-plane", "True")),
            (*KUBECTL, "get", "pods"): _items(("coredns-1", "True")),
        },
        failures={(*KUBECTL, "get", "--raw"): "the server is currently unable to handle the request"},
    )
    assert up.readiness_problems(runner, "chaoskit") == ["metrics API not serving yet"]


def test_readiness_problems_is_empty_for_a_ready_cluster() -> None:
    runner = FakeRunner(
        responses={
            ("docker", "ps"): PS_LINE,
            (*KUBECTL, "get", "nodes"): _items(("chaoskit-control-plane", "True")),
            (*KUBECTL, "get", "pods"): _items(("coredns-1", "True")),
            (*KUBECTL, "get", "--raw"): "{}",
        }
    )
    assert up.readiness_problems(runner, "chaoskit") == []


def test_kube_proxy_problems_names_each_node_without_a_running_kube_proxy() -> None:
    pods = json.loads(_items(("kube-proxy-a", "True"), ("kube-proxy-b", "False"), ("kube-proxy-c", "False")))
    for pod, node in zip(pods["items"], ("chaoskit-control-plane", "chaoskit-worker", None), strict=True):
        pod["spec"] = {"nodeName": node} if node else {}  # a pod not scheduled yet has no node
    runner = FakeRunner(
        responses={
            ("docker", "ps"): PS_LINE,
            (*KUBECTL, "get", "nodes"): _items(
                ("chaoskit-control-plane", "True"), ("chaoskit-worker", "True"), ("chaoskit-worker2", "False")
            ),
            (*KUBECTL, "get", "pods", "-n", "kube-system", "-l", "k8s-app=kube-proxy"): json.dumps(pods),
        }
    )
    assert up.kube_proxy_problems(runner, "chaoskit") == [
        "no kube-proxy running on chaoskit-worker",
        "no kube-proxy running on chaoskit-worker2",
    ]


def _node_at(name: str, ip: str) -> dict:
    return {"metadata": {"name": name}, "status": {"addresses": [{"type": "InternalIP", "address": ip}]}}


@pytest.mark.parametrize(("container_ip", "moved"), [("172.18.0.3", []), ("172.18.0.4", ["chaoskit-control-plane"])])
def test_a_node_whose_container_address_changed_since_it_registered_is_moved(container_ip: str, moved: list) -> None:
    runner = FakeRunner(
        responses={
            ("docker", "ps"): PS_LINE,
            (*KUBECTL, "get", "nodes"): json.dumps({"items": [_node_at("chaoskit-control-plane", "172.18.0.3")]}),
            ("docker", "inspect"): f"/chaoskit-control-plane {container_ip} \n",
        }
    )
    assert up.moved_nodes(runner, "chaoskit") == moved


# --- status ------------------------------------------------------------------------------------


def test_status_without_docker_reports_no_cluster() -> None:
    runner = FakeRunner(failures={("docker", "info"): "Cannot connect to the Docker daemon"})
    st = up.status("chaoskit", runner)
    assert (st.docker, st.exists, st.nodes) == (False, False, [])


def test_status_reports_nodes_and_their_kubelet_versions() -> None:
    nodes = json.loads(_items(("chaoskit-control-plane", "True")))
    nodes["items"][0]["status"]["nodeInfo"] = {"kubeletVersion": "v1.34.4"}
    runner = FakeRunner(
        responses={
            ("docker", "ps"): PS_LINE,
            (*KUBECTL, "get", "--raw", "/readyz"): "ok",
            (*KUBECTL, "get", "nodes"): json.dumps(nodes),
        }
    )

    st = up.status("chaoskit", runner)

    assert (st.docker, st.exists, st.api_server, st.kubeconfig_context) == (True, True, "ok", "kind-chaoskit")
    (node,) = st.nodes
    assert (node.name, node.role, node.container, node.ready, node.kubelet_version) == (
        "chaoskit-control-plane",
        "control-plane",
        "running",
        True,
        "v1.34.4",
    )


def test_status_reports_an_unreachable_api_server_by_its_first_error_line() -> None:
    runner = FakeRunner(
        responses={("docker", "ps"): PS_LINE},
        failures={(*KUBECTL,): "The connection to the server was refused"},
    )
    st = up.status("chaoskit", runner)
    assert st.exists and st.api_server.startswith("unreachable: command failed (exit 1):")
    assert st.nodes[0].ready is None


@pytest.mark.parametrize(
    ("marker", "made_from"),
    [(None, None), ({"data": {"createdBy": "chaoskit 0.1"}}, ""), ({"data": {"kindConfig": "1c10459c"}}, "1c10459c")],
)
def test_the_config_a_cluster_was_made_from_is_read_from_its_marker(marker: dict | None, made_from: str | None) -> None:
    get = (*KUBECTL, "get", "configmap", "-n", "kube-system", "chaoskit-cluster")
    if marker is None:
        runner = FakeRunner(responses={("docker", "ps"): PS_LINE}, failures={get: "NotFound"})
    else:
        runner = FakeRunner(responses={("docker", "ps"): PS_LINE, get: json.dumps(marker)})
    assert up.config_made_from(runner, "chaoskit") == made_from
