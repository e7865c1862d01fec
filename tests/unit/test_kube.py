"""chaoskit.seams.kube: REST paths of objects and status conditions (no API server involved)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chaoskit.seams.kube import FakeKube, Kube, KubeError, NotFound, Obj, condition, object_path


def _obj(api_version: str, kind: str, name: str = "web", namespace: str | None = "demo") -> Obj:
    meta = {"name": name} | ({"namespace": namespace} if namespace else {})
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


@pytest.mark.parametrize(
    ("obj", "item", "collection"),
    [
        (_obj("v1", "Namespace", "demo", None), "/api/v1/namespaces/demo", "/api/v1/namespaces"),
        (
            _obj("apps/v1", "Deployment"),
            "/apis/apps/v1/namespaces/demo/deployments/web",
            "/apis/apps/v1/namespaces/demo/deployments",
        ),
        (
            _obj("autoscaling/v2", "HorizontalPodAutoscaler"),
            "/apis/autoscaling/v2/namespaces/demo/horizontalpodautoscalers/web",
            "/apis/autoscaling/v2/namespaces/demo/horizontalpodautoscalers",
        ),
        (_obj("v1", "Pod", "client"), "/api/v1/namespaces/demo/pods/client", "/api/v1/namespaces/demo/pods"),
        (
            _obj("coordination.k8s.io/v1", "Lease", "kube-scheduler", "kube-system"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
        ),
        (_obj("v1", "Node", "kwok-node-0", None), "/api/v1/nodes/kwok-node-0", "/api/v1/nodes"),
        (
            _obj("rbac.authorization.k8s.io/v1", "RoleBinding", "kwok-controller", "kube-node-lease"),
            "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-node-lease/rolebindings/kwok-controller",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-node-lease/rolebindings",
        ),
    ],
    ids=["Namespace", "Deployment", "HorizontalPodAutoscaler", "Pod", "Lease", "Node", "RoleBinding"],
)
def test_object_path(obj: Obj, item: str, collection: str) -> None:
    assert object_path(obj) == item
    assert object_path(obj, collection=True) == collection


def test_object_path_of_a_collection_needs_no_name() -> None:
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "demo"}}
    assert object_path(obj, collection=True) == "/api/v1/namespaces/demo/pods"


def test_object_path_of_an_unknown_kind_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        object_path(_obj("batch/v1", "Job"))


def _with_conditions(conditions: object) -> Obj:
    return {"status": {"conditions": conditions}}


def test_condition_is_true_only_for_status_true() -> None:
    obj = _with_conditions(
        [
            {"type": "Ready", "status": "True"},
            {"type": "DiskPressure", "status": "False"},
            {"type": "MemoryPressure", "status": "Unknown"},
        ]
    )
    assert condition(obj, "Ready") is True
    assert condition(obj, "DiskPressure") is False
    assert condition(obj, "MemoryPressure") is False
    assert condition(obj, "PIDPressure") is False


@pytest.mark.parametrize(
    "obj",
    [{}, {"status": {}}, _with_conditions(None), _with_conditions([])],
    ids=["no-status", "no-conditions", "null-conditions", "empty-conditions"],
)
def test_condition_without_conditions_is_false(obj: Obj) -> None:
    assert condition(obj, "Ready") is False


class RecordingApi:
    """Stands in for the API client: keeps the query of each call and answers an empty stream."""

    def __init__(self) -> None:
        self.queries: list[list[tuple[str, str]]] = []

    def call_api(self, path: str, method: str, query_params: list[tuple[str, str]], **_: Any) -> Any:
        self.queries.append(query_params)
        return EmptyStream()


class EmptyStream:
    """A watch response the server ended before any event."""

    def stream(self, **_: Any) -> Iterator[bytes]:
        return iter(())

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


def test_a_watch_asks_the_api_server_to_end_it_after_its_window() -> None:
    api = RecordingApi()
    assert list(Kube(api).events("/api/v1/pods", 5, resourceVersion="7")) == []  # type: ignore[arg-type]
    (query,) = api.queries
    # a misspelt timeout is ignored by the API server, and the watch then runs for 30-60 min
    assert ("timeoutSeconds", "5") in query and ("resourceVersion", "7") in query and ("watch", "true") in query


def test_an_api_error_says_the_servers_message_not_its_json() -> None:
    from kubernetes.client.exceptions import ApiException

    from chaoskit.seams.kube import _said

    status = ApiException(status=404, reason="Not Found")
    status.body = '{"kind":"Status","message":"secrets \\"x\\" not found","code":404}'
    assert _said(status) == 'secrets "x" not found'
    plain = ApiException(status=502, reason="Bad Gateway")
    plain.body = b"<html>upstream down</html>"
    assert _said(plain) == "<html>upstream down</html>"


class TimingOutApi:
    """An API server that does not answer within the request's timeout."""

    def call_api(self, *_: Any, **__: Any) -> Any:
        raise TimeoutError("The read operation timed out")


def test_an_apply_without_an_answer_is_the_seams_error_with_no_status() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "kube-system"}}
    with pytest.raises(KubeError) as err:
        Kube(TimingOutApi()).apply(obj)
    assert err.value.status is None and "apply ConfigMap/x: TimeoutError" in str(err.value)


def test_the_fake_lists_a_namespaced_kind_across_namespaces_as_the_api_server_does() -> None:
    ds = {
        f"/apis/apps/v1/namespaces/{ns}/daemonsets/{n}": {"metadata": {"name": n}} for ns, n in (("a", "x"), ("b", "y"))
    }
    kube = FakeKube({**ds, "/apis/apps/v1/namespaces/a/deployments/z": {"metadata": {"name": "z"}}})
    assert [d["metadata"]["name"] for d in kube.get("/apis/apps/v1/daemonsets")["items"]] == ["x", "y"]
    assert [d["metadata"]["name"] for d in kube.get("/apis/apps/v1/namespaces/b/daemonsets")["items"]] == ["y"]
    assert kube.get("/apis/apps/v1/statefulsets") == {"items": []}  # a kind with none is an empty list, not 404
    with pytest.raises(NotFound):
        kube.get("/apis/apps/v1/namespaces/a/statefulsets/gone")  # no such object is 404


def test_the_fake_creates_as_the_api_server_does_with_generate_name_and_dry_run() -> None:
    kube = FakeKube()
    path = "/api/v1/namespaces/a/pods"
    dry = kube.request("POST", path, {"metadata": {"generateName": "probe-"}}, [("dryRun", "All")])
    assert dry["metadata"]["name"].startswith("probe-") and kube.get(path) == {"items": []}
    made = kube.create(path, {"metadata": {"generateName": "probe-"}})
    assert made["metadata"]["name"].startswith("probe-") and len(kube.get(path)["items"]) == 1
