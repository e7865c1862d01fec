"""The http probe as rich as our peers': a POST with headers and a body, judged on its status and its response body,
from a pod in the cluster through chaoskit's workload's Service (/echo answers with the request as it arrived). A
probe whose criteria the answers miss counts each such request as failed, and says which criterion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.radius import W2, WORKLOAD, namespace, on_node, touches

pytestmark = touches(on_node("kube-proxy", W2), namespace("chaoskit-http-probe"), WORKLOAD)

PLAYBOOK = """\
apiVersion: chaoskit.dev/v1alpha1
kind: Playbook
metadata: {name: http-probe}
spec:
  diagnose: false
  workload: {replicas: 1, load: {concurrency: 0}}
  probes:
    - name: echo
      http:
        url: http://web.chaoskit-http-probe.svc.cluster.local/echo
        method: POST
        headers: {X-Chaoskit: e2e, Content-Type: text/plain}
        body: ping from the probe
        status: [200]
        bodyContains: "X-Chaoskit: e2e"
        bodyMatches: "^POST web-[a-z0-9-]+\\n(.*\\n)*\\nping from the probe$"
      every: 500ms
      slo: {successRate: 100}
    - name: teapot
      http:
        url: http://web.chaoskit-http-probe.svc.cluster.local/
        status: [418]
      every: 500ms
      slo: {successRate: 50}
      when: [after]
  steps:
    - fault: kube-proxy.freeze
      target: {node: chaoskit-worker2}
      duration: 3s
"""


def test_a_post_with_headers_and_body_meets_its_criteria_and_a_missed_status_fails_each_request(
    run_playbook: Any, tmp_path: Path
) -> None:
    path = tmp_path / "http-probe.yaml"
    path.write_text(PLAYBOOK)
    rec = run_playbook(path)  # the pytest plugin's fixture
    probes = {p["name"]: p for p in rec["probes"]}
    echo, teapot = probes["echo"], probes["teapot"]
    for phase in echo["phases"]:
        print(f"echo {phase['phase']}: {phase['reason']}")
    print(f"teapot after: {teapot['phases'][0]['reason']}; a sample: {teapot['samples'][-1]}")
    assert [p["phase"] for p in echo["phases"]] == ["before", "during", "after"]
    assert all(p["ok"] and p["samples"] >= 2 for p in echo["phases"]), echo["phases"]
    missed = [s for s in echo["samples"] if not (s[1] and s[3] == "HTTP 200")]
    assert not missed, f"every request met every criterion; missed {missed}; phases {rec['probe_windows']}"
    (after,) = teapot["phases"]
    assert not after["ok"] and after["success_rate"] == 0 and after["samples"] >= 2, after
    assert all(not s[1] and s[3] == "HTTP 200: status 200 not accepted" for s in teapot["samples"])
    assert rec["verdict"] == "deviated" and rec["exit_code"] == 1, "a probe that missed its SLO deviates the run"
