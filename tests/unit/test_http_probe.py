"""The http probe's request and criteria: validated at file:line:col, passed to the probe pod, judged per line."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaoskit.errors import PlaybookError
from chaoskit.model.probes import HttpProbe, Probe, probe_words
from chaoskit.playbook import load_playbook
from chaoskit.probes.http import parse_line, request_flags
from chaoskit.registry import load_catalog
from chaoskit.workloads import probe_pod

load_catalog()

PLAYBOOK = """\
apiVersion: chaoskit.dev/v1alpha1
kind: Playbook
metadata: {name: hp}
spec:
  workload: {replicas: 1}
  probes:
    - name: api
      http:
%s
      slo: {successRate: 99}
  steps:
    - fault: scheduler.down
      duration: 5s
"""


def _load(tmp_path: Path, http: str) -> object:
    path = tmp_path / "hp.yaml"
    path.write_text(PLAYBOOK % "\n".join("        " + line for line in http.strip().split("\n")))
    return load_playbook(path)


def test_a_full_request_with_criteria_loads(tmp_path: Path) -> None:
    pb = _load(
        tmp_path,
        """
url: http://web.chaoskit-hp.svc/echo
method: POST
headers: {X-Chaoskit: "yes", Content-Type: text/plain}
body: "-starts-with-a-dash"
status: [200, 2xx, 200-204]
bodyContains: "X-Chaoskit: yes"
bodyMatches: "^POST "
""",
    )
    http = pb.spec.probes[0].http  # type: ignore[attr-defined]
    assert http.method == "POST" and http.status == [200, "2xx", "200-204"]
    assert request_flags(http) == [
        "-method=POST",
        "-header=X-Chaoskit: yes",
        "-header=Content-Type: text/plain",
        "-body=-starts-with-a-dash",
        "-status=200,2xx,200-204",
        "-contains=X-Chaoskit: yes",
        "-matches=^POST ",
    ]


@pytest.mark.parametrize(
    ("http", "where", "said"),
    [
        ("url: http://x/\nstatus: [200, 700]", ":10:", "status[1]: 700 is no HTTP status"),
        ("url: http://x/\nstatus: [299-200]", ":10:", "a range runs from its lower code"),
        ("url: http://x/\nstatus: [abc]", ":10:", "'abc' is no status"),
        ("url: http://x/\nbody: x", ":10:", "a GET request carries no body"),
        ("url: http://x/\nbodyMatches: '(?<=a)b'", ":10:", "no lookaround or backreferences"),
        ("url: http://x/\nbodyMatches: '(a'", ":10:", "not a regular expression"),
        ("url: http://x/\nheaders: {'a b': c}", ":10:", "is no header name"),
        ("url: http://x/\nmethod: FETCH", ":10:", "method"),
    ],
)
def test_a_bad_request_or_criterion_is_named_at_its_line(tmp_path: Path, http: str, where: str, said: str) -> None:
    with pytest.raises(PlaybookError) as caught:
        _load(tmp_path, http)
    text = str(caught.value) + "".join(str(p) for p in getattr(caught.value, "problems", []))
    assert said in text and f"hp.yaml{where}" in text, text


def test_each_line_is_a_success_only_when_answered_and_every_criterion_met() -> None:
    ok = parse_line("1000 200 12.5")
    assert ok is not None and ok.ok and ok.value == 0.0125 and ok.detail == "HTTP 200"
    missed = parse_line('1000 200 3.0 body lacks "ready"')
    assert missed is not None and not missed.ok and missed.detail == 'HTTP 200: body lacks "ready"'
    refused = parse_line("1000 503 3.0 status 503 not accepted")
    assert refused is not None and not refused.ok and "503 not accepted" in refused.detail
    gone = parse_line("1000 0 2000.0 dial tcp: connection refused")
    assert gone is not None and not gone.ok and gone.detail == "dial tcp: connection refused"
    assert parse_line("garbage") is None


def test_the_probe_pod_gets_the_flags_and_the_plan_says_the_criteria() -> None:
    spec = HttpProbe(url="http://web/", method="PUT", body="x", status=["2xx"], body_contains="ok")
    args = probe_pod("ns", "probe-api", spec.url, 1.0, 2.0, request=request_flags(spec))["spec"]["containers"][0][
        "args"
    ]
    assert args[:2] == ["probe", "http://web/"] and args[-4:] == [
        "-method=PUT",
        "-body=x",
        "-status=2xx",
        "-contains=ok",
    ]
    words = probe_words(Probe(name="api", http=spec, slo={"successRate": 99}))
    assert words.startswith("api: PUT http://web/ (timeout 2s; status 2xx; body contains 'ok')"), words
