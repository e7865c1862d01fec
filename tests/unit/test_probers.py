"""The polled probe kinds against fakes at their seams: a k8s object's condition and field, a PromQL answer from a
local HTTP server standing in for Prometheus, a command's exit code."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from chaoskit.model.probes import K8sProbe, Probe, PromqlProbe
from chaoskit.model.slo import ProbeSample
from chaoskit.probes import run as probes_run
from chaoskit.probes.base import ProbeError, Prober
from chaoskit.probes.k8s import K8sProber
from chaoskit.probes.promql import PromqlProber
from chaoskit.probes.run import ProbeSet
from chaoskit.seams.kube import FakeKube

DEPLOY = "/apis/apps/v1/namespaces/shop/deployments/prices"


def _k8s(**spec: object) -> K8sProber:
    kube = FakeKube(
        {
            DEPLOY: {"status": {"readyReplicas": 2, "conditions": [{"type": "Available", "status": "True"}]}},
            "/apis/apps/v1": {
                "resources": [
                    {"kind": "Deployment", "name": "deployments", "namespaced": True},
                    {"kind": "Scale", "name": "deployments/scale"},
                ]
            },
        }
    )
    base = {"api_version": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "prices"}
    return K8sProber(kube, K8sProbe.model_validate({**base, **spec}))


def _started(prober: K8sProber) -> K8sProber:
    prober.start()
    return prober


def test_a_k8s_probe_reads_a_condition_or_a_field_against_its_bound() -> None:
    assert _started(_k8s(condition="Available")).path == DEPLOY
    assert _started(_k8s(condition="Available")).poll().ok
    assert not _started(_k8s(condition="Progressing")).poll().ok  # absent: not True
    assert _started(_k8s(field="status.readyReplicas", min=2)).poll().ok
    sample = _started(_k8s(field="status.readyReplicas", min=3)).poll()
    assert not sample.ok and sample.value == 2 and sample.detail == "status.readyReplicas is 2"


def test_a_k8s_probe_of_an_object_not_there_yet_starts_and_fails_its_samples_but_an_unserved_kind_is_an_error() -> None:
    missing = _k8s(condition="Available")
    del missing.kube.objects[DEPLOY]  # type: ignore[attr-defined]
    missing.start()
    assert not missing.poll().ok
    unserved = K8sProber(
        FakeKube(),
        K8sProbe.model_validate({"api_version": "example.com/v1", "kind": "Widget", "name": "w", "condition": "Ready"}),
    )
    with pytest.raises(ProbeError, match="k8s probe Widget w: the cluster serves no example.com/v1"):
        unserved.start()


@pytest.fixture
def prometheus() -> Iterator[str]:
    """A stand-in for Prometheus' instant-query API: `up` is 3, anything with 'bad(' is a parse error."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            query = parse_qs(urlparse(self.path).query)["query"][0]
            if "bad(" in query:
                self.send_response(400)
                body = {"status": "error", "errorType": "bad_data", "error": "parse error"}
            else:
                self.send_response(200)
                body = {
                    "status": "success",
                    "data": {"resultType": "vector", "result": [{"metric": {}, "value": [0, "3"]}]},
                }
            self.end_headers()
            self.wfile.write(json.dumps(body).encode())

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_a_promql_probe_compares_the_first_value_and_a_refused_query_is_an_error(prometheus: str) -> None:
    ok = PromqlProber(PromqlProbe(query="sum(up)", url=prometheus, min=3))
    ok.start()
    assert ok.poll().ok and ok.poll().value == 3.0
    low = PromqlProber(PromqlProbe(query="sum(up)", url=prometheus, min=4))
    low.start()
    sample = low.poll()
    assert not sample.ok and sample.detail == "sum(up) = 3, below its min 4"
    high = PromqlProber(PromqlProbe(query="sum(up)", url=prometheus, max=2))
    high.start()
    assert high.poll().detail == "sum(up) = 3, above its max 2"
    with pytest.raises(ProbeError, match="promql probe 'bad\\(up\\)'"):
        PromqlProber(PromqlProbe(query="bad(up)", url=prometheus, max=1)).start()


class _Timed(Prober):
    """A polled prober whose every sample takes `takes` seconds."""

    def __init__(self, takes: float) -> None:
        self.takes = takes

    def poll(self) -> ProbeSample:
        at = time.time()
        time.sleep(self.takes)
        return ProbeSample(at, True)


def _probe(name: str, every: str) -> Probe:
    return Probe.model_validate(
        {"name": name, "command": {"argv": ["true"]}, "every": every, "when": ["before", "after"]}
    )


def test_a_slow_probe_delays_no_other_and_the_after_phase_waits_for_a_sample_of_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(probes_run, "MIN_PHASE_S", 0.2)
    probes = ProbeSet([(_probe("slow", "50ms"), _Timed(0.6)), (_probe("fast", "50ms"), _Timed(0.0))])
    probes.start()
    probes.before_ends()
    probes.after_starts()
    records = {r.name: r for r in probes.finish()}
    # one sampling loop for all took one fast sample per slow one (0.6 s) and none of either in a 0.2 s after phase
    assert len(records["fast"].samples) >= 3 * len(records["slow"].samples), records
    for r in records.values():
        assert all(p.ok and p.samples >= 1 for p in r.phases), (r.name, r.phases)
