"""The kube seam's errors carry the API's HTTP status, as their class where callers act on it."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from chaoskit.seams.kube import Conflict, FakeKube, Forbidden, Kube, KubeError, NotFound


class Answering:
    """Below the client: an ApiClient whose every call is answered with `status` (or raises a connection error)."""

    def __init__(self, status: int | None) -> None:
        self.status = status

    def call_api(self, *args: Any, **kwargs: Any) -> Any:
        if self.status is None:
            raise ConnectionRefusedError("connection refused")
        raise ApiException(status=self.status, reason="Said so")


@pytest.mark.parametrize(
    ("status", "kind"), [(404, NotFound), (403, Forbidden), (409, Conflict), (500, KubeError), (None, KubeError)]
)
def test_an_answer_becomes_the_error_of_its_status(status: int | None, kind: type[KubeError]) -> None:
    kube = Kube(api=Answering(status))
    with pytest.raises(KubeError) as raised:
        kube.get("/api/v1/namespaces/x")
    assert type(raised.value) is kind and raised.value.status == status
    assert str(raised.value).startswith("GET /api/v1/namespaces/x: ")


def test_the_clients_own_failure_is_no_answer() -> None:
    """The client raises ApiException with status 0 for what never reached the API server (TLS, refused)."""
    with pytest.raises(KubeError) as raised:
        Kube(api=Answering(0)).get("/x")
    assert type(raised.value) is KubeError and raised.value.status is None


def test_absence_is_an_answer_to_find_and_delete_and_other_refusals_still_raise() -> None:
    assert Kube(api=Answering(404)).find("/x") is None and Kube(api=Answering(404)).delete("/x") is None
    with pytest.raises(Forbidden):
        Kube(api=Answering(403)).find("/x")


def test_the_fake_refuses_as_the_api_server_does() -> None:
    kube = FakeKube({"/api/v1/namespaces/a": {"metadata": {"name": "a"}}})
    with pytest.raises(NotFound) as missing:
        kube.get("/api/v1/namespaces/b")
    assert missing.value.status == 404 and "HTTP 404" in str(missing.value)
    with pytest.raises(Conflict) as taken:
        kube.create("/api/v1/namespaces", {"metadata": {"name": "a"}})
    assert taken.value.status == 409
    with pytest.raises(NotFound):
        kube.patch("/api/v1/namespaces/b", {"metadata": {"labels": {}}})
