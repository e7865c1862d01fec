"""The one polling loop: what it returns, which errors it waits out, and Kube.wait's message on a timeout."""

from __future__ import annotations

import pytest

from chaoskit.errors import CommandError, UsageError
from chaoskit.seams.kube import FakeKube, KubeError
from chaoskit.seams.poll import poll


def test_poll_returns_the_first_truthy_answer_and_how_long_it_took() -> None:
    answers: list[object] = [0, "", "ready"]
    polled = poll(lambda: answers.pop(0), timeout=5, interval=0.001)
    assert polled.done and polled.value == "ready" and 0 <= polled.seconds < 5 and polled.last_error == ""


def test_poll_waits_out_tool_errors_and_keeps_the_last_one() -> None:
    def check() -> bool:
        raise CommandError(["curl"], 7, "refused")

    polled = poll(check, timeout=0.01, interval=0.001)
    assert not polled.done and polled.value is None and polled.seconds >= 0.01
    assert "exit 7" in polled.last_error


def test_poll_lets_errors_it_does_not_tolerate_through() -> None:
    def check() -> bool:
        raise KubeError("HTTP 500")

    with pytest.raises(KubeError):
        poll(check, timeout=1, interval=0.001, tolerate=(UsageError,))


def test_kube_wait_names_what_it_waited_for_and_the_last_api_error() -> None:
    kube = FakeKube()
    with pytest.raises(KubeError, match=r"timed out after 0.01s waiting for the pod \(last error: GET /x: HTTP 404"):
        kube.wait("the pod", lambda: kube.get("/x"), timeout=0.01, interval=0.001)
    assert kube.wait("anything", lambda: 42, timeout=1) == 42
