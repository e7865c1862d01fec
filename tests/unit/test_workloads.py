"""chaoskit.workloads: the test workload's manifests are well-formed and fit an offline kind cluster."""

from __future__ import annotations

import pytest

from chaoskit import workloads as w
from chaoskit.cluster.images import WORKLOAD_IMAGE
from chaoskit.seams.kube import Obj, object_path

NS = "chaos-demo"


def _all() -> list[Obj]:
    return [
        w.namespace(NS),
        w.web_deployment(NS),
        w.service(NS),
        w.hpa(NS),
        w.load_generator(NS, "http://web.chaos-demo.svc/"),
        w.client_pod(NS, "client"),
    ]


def _pod_spec(obj: Obj) -> Obj:
    return obj["spec"]["template"]["spec"] if obj["kind"] == "Deployment" else obj["spec"]


@pytest.mark.parametrize("obj", _all(), ids=lambda o: o["kind"] + "/" + o["metadata"]["name"])
def test_manifest_has_a_rest_path(obj: Obj) -> None:
    path = object_path(obj)
    assert path.endswith("/" + obj["metadata"]["name"])
    if obj["kind"] != "Namespace":
        assert f"/namespaces/{NS}/" in path


def test_namespace_is_marked_as_owned_by_chaoskit() -> None:
    assert w.namespace(NS)["metadata"]["labels"] == {"chaoskit.dev/owned": "true"}


@pytest.mark.parametrize(
    "obj", [o for o in _all() if o["kind"] in ("Deployment", "Pod")], ids=lambda o: o["metadata"]["name"]
)
def test_workload_containers_use_the_preloaded_image_and_never_pull(obj: Obj) -> None:
    for container in _pod_spec(obj)["containers"]:
        assert container["image"] == WORKLOAD_IMAGE
        assert container["imagePullPolicy"] == "Never"
        assert "cpu" in container["resources"]["requests"]  # the HPA needs requests to compute utilisation


@pytest.mark.parametrize(
    "obj", [w.web_deployment(NS), w.load_generator(NS, "http://x/")], ids=lambda o: o["metadata"]["name"]
)
def test_deployment_selector_matches_its_pod_labels(obj: Obj) -> None:
    selector = obj["spec"]["selector"]["matchLabels"]
    assert selector.items() <= obj["spec"]["template"]["metadata"]["labels"].items()


def test_web_pods_spread_over_nodes_by_hostname() -> None:
    deployment = w.web_deployment(NS)
    (spread,) = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname"
    assert spread["maxSkew"] == 1
    assert spread["labelSelector"]["matchLabels"] == deployment["spec"]["template"]["metadata"]["labels"]


def test_web_deployment_parameters_are_applied() -> None:
    deployment = w.web_deployment(NS, name="api", replicas=3, cpu_request="250m")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert deployment["metadata"]["name"] == "api"
    assert deployment["spec"]["replicas"] == 3
    assert container["resources"]["requests"]["cpu"] == "250m"
    assert deployment["spec"]["template"]["metadata"]["labels"] == {"app": "api"}


def test_service_selects_the_web_pods_on_their_container_port() -> None:
    deployment, service = w.web_deployment(NS), w.service(NS)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    (port,) = service["spec"]["ports"]
    assert service["spec"]["selector"] == deployment["spec"]["template"]["metadata"]["labels"]
    assert port["targetPort"] == container["ports"][0]["containerPort"] == w.PORT
    assert container["readinessProbe"]["httpGet"]["port"] == w.PORT


def test_hpa_scales_the_web_deployment_and_scales_down_after_15_seconds() -> None:
    hpa, deployment = w.hpa(NS), w.web_deployment(NS)
    ref = hpa["spec"]["scaleTargetRef"]
    assert (ref["apiVersion"], ref["kind"], ref["name"]) == (
        deployment["apiVersion"],
        deployment["kind"],
        deployment["metadata"]["name"],
    )
    assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 15
    assert hpa["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"] == 0
    assert hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    (metric,) = hpa["spec"]["metrics"]
    assert metric["resource"]["name"] == "cpu"
    assert metric["resource"]["target"] == {"type": "Utilization", "averageUtilization": 50}


def test_load_generator_targets_the_given_url() -> None:
    (container,) = w.load_generator(NS, "http://web/", concurrency=8)["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["load", "-c", "8", "http://web/"]


def test_client_pod_is_pinned_to_a_node_only_when_asked() -> None:
    assert "nodeName" not in w.client_pod(NS, "client")["spec"]
    assert w.client_pod(NS, "client", node="chaoskit-worker")["spec"]["nodeName"] == "chaoskit-worker"
