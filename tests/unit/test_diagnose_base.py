"""The pieces every diagnoser stands on: status rules, the registry, node scripts framed into sections, bounded
API reads with their breaker, metrics and histogram quantiles, HTTP answers, certificate dates, log excerpts."""

from __future__ import annotations

import subprocess
import time
from typing import Any

import pytest

from chaoskit.cluster.kube import FakeKube, KubeError
from chaoskit.cluster.nodeexec import FakeNodeExec
from chaoskit.cluster.shell import FakeRunner
from chaoskit.diagnosers.base import DIAGNOSERS, ComponentReport, Diagnosis, Evidence, Finding, by_severity, status_of
from chaoskit.diagnosers.common import HttpAnswer, excerpt, failing_checks, parse_not_after
from chaoskit.diagnosers.metrics import Histogram, Metrics, windowed
from chaoskit.diagnosers.run import components
from chaoskit.diagnosers.sources import ApiAccess, Section, Sources, parse_sections, section_script, short_reason
from chaoskit.errors import DuplicateName, UnknownName
from chaoskit.faults.base import Env

REFUSED = (
    "GET /readyz: MaxRetryError: HTTPSConnectionPool(host='127.0.0.1', port=9): Max retries exceeded (Caused "
    "by NewConnectionError(': Failed to establish a new connection: [Errno 111] Connection refused'))"
)


def finding(severity: Any, title: str = "t") -> Finding:
    return Finding(severity, "apiserver", title, "cause", (Evidence("readyz", "curl"),), ("fix",))


def test_status_is_failed_on_any_critical_degraded_on_any_warning_else_ok() -> None:
    assert status_of([finding("info"), finding("critical"), finding("warning")]) == "failed"
    assert status_of([finding("info"), finding("warning")]) == "degraded"
    assert status_of([finding("info")]) == "ok" and status_of([]) == "ok"


def test_findings_are_ordered_by_severity_keeping_check_order() -> None:
    ordered = by_severity(
        [finding("info", "a"), finding("warning", "b"), finding("critical", "c"), finding("warning", "d")]
    )
    assert [f.title for f in ordered] == ["c", "b", "d", "a"]


def test_a_diagnosis_survives_json_and_takes_its_worst_status() -> None:
    ok = ComponentReport("etcd", "cp", "ok", (), (Evidence("health", "curl", {"health": "true"}),))
    bad = ComponentReport("apiserver", "cp", "failed", (finding("critical"),), (Evidence("readyz", "curl"),))
    d = Diagnosis("chaoskit", (ok, bad), 1796010840.0, 7.25)
    assert d.status == "failed" and not d.ok
    assert Diagnosis.from_dict(d.to_dict()) == d


def test_every_component_has_a_registered_diagnoser_in_troubleshooting_order() -> None:
    assert components() == [
        "apiserver",
        "etcd",
        "scheduler",
        "controller-manager",
        "kubelet",
        "kube-proxy",
        "runtime",
        "reverts",
    ]
    assert components(["runtime", "apiserver"]) == ["apiserver", "runtime"]
    with pytest.raises(UnknownName, match="did you mean 'kubelet'"):
        components(["kubelt"])
    with pytest.raises(DuplicateName):
        DIAGNOSERS.add("apiserver", DIAGNOSERS.get("etcd"))


def test_a_node_script_splits_back_into_its_commands_with_their_exit_codes() -> None:
    script = section_script({"mode": "printf iptables", "fails": "echo oops; false", "quiet": "true"})
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout
    assert parse_sections(out) == {
        "mode": Section("iptables", 0),
        "fails": Section("oops", 1),
        "quiet": Section("", 0),
    }


def test_a_script_cut_off_mid_command_keeps_what_it_printed() -> None:
    assert parse_sections("@@chaoskit-section a\npartial")["a"] == Section("partial", None)


def sources(kube: FakeKube, runner: FakeRunner | None = None, timeout: float = 2.0) -> Sources:
    env = Env(kube, FakeNodeExec(runner or FakeRunner()), "chaoskit")
    return Sources.of(env, "cp", ("cp", "w"), api_timeout=timeout)


def test_a_node_that_cannot_be_reached_gives_sections_that_did_not_run() -> None:
    runner = FakeRunner(failures={("w",): "Error response from daemon: container is not running"})
    got = sources(FakeKube(), runner).sections("w", {"a": "true", "b": "true"})
    assert set(got) == {"a", "b"} and all(s.rc is None and "could not run on w" in s.output for s in got.values())


class Unreachable(FakeKube):
    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        self.calls.append((method, path))
        raise KubeError(REFUSED)


class Hanging(FakeKube):
    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        self.calls.append((method, path))
        time.sleep(5)


def test_api_reads_that_answer_are_cached_and_a_404_is_not_an_outage() -> None:
    kube = FakeKube({"/api/v1/nodes/a": {"metadata": {"name": "a"}}})
    api = ApiAccess(kube)
    assert api.fetch("/api/v1/nodes/a").data["metadata"]["name"] == "a"
    api.fetch("/api/v1/nodes/a")
    missing = api.fetch("/api/v1/nodes/b")
    assert "HTTP 404" in missing.error and not api.down
    assert kube.calls == [("GET", "/api/v1/nodes/a"), ("GET", "/api/v1/nodes/b")]


def test_the_first_refused_connection_marks_the_api_down_and_later_reads_fail_at_once() -> None:
    kube = Unreachable()
    api = ApiAccess(kube)
    first = api.fetch("/api/v1/nodes")
    assert first.error == "GET /readyz: [Errno 111] Connection refused" and api.down
    second = api.fetch("/api/v1/pods")
    assert second.error.startswith("API server unreachable") and kube.calls == [("GET", "/api/v1/nodes")]


def test_a_hanging_api_is_given_up_on_after_the_timeout() -> None:
    api = ApiAccess(Hanging(), timeout=0.2)
    t0 = time.monotonic()
    got = api.fetch("/api/v1/nodes")
    assert time.monotonic() - t0 < 2 and "no answer within 0.2s" in got.error and api.down


def test_short_reasons_drop_urllib3s_wrapping() -> None:
    expired = (
        "GET /readyz: HTTP 0 None: (MaxRetryError(\"... (Caused by SSLError(SSLCertVerificationError(1, '[SSL:"
        " CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired (_ssl.c:1010)')))\"))"
    )
    assert short_reason(expired) == "GET /readyz: certificate verify failed: certificate has expired"
    assert short_reason("GET /x: HTTP 503 Service Unavailable: {}") == "GET /x: HTTP 503 Service Unavailable"


def test_histogram_quantile_interpolates_like_promql() -> None:
    h = Histogram(((0.1, 50.0), (0.5, 90.0), (1.0, 100.0), (float("inf"), 100.0)), 100.0, 20.0)
    assert h.quantile(0.5) == pytest.approx(0.1)
    assert h.quantile(0.9) == pytest.approx(0.5)
    assert h.quantile(0.99) == pytest.approx(0.95)
    assert Histogram(((float("inf"), 3.0),), 3.0, 1.0).quantile(0.5) == 0.0
    assert h.mean == pytest.approx(0.2)


def test_a_window_needs_observations_and_survives_a_counter_reset() -> None:
    before = Histogram(((1.0, 10.0), (float("inf"), 10.0)), 10.0, 2.0)
    same, basis = windowed(before, before)
    assert basis == "since start" and same == before
    later = Histogram(((1.0, 12.0), (float("inf"), 15.0)), 15.0, 9.0)
    delta, basis = windowed(later, before)
    assert basis == "window" and delta is not None and delta.count == 5 and delta.buckets[0] == (1.0, 2.0)
    restarted = Histogram(((1.0, 1.0), (float("inf"), 1.0)), 1.0, 0.5)
    assert windowed(restarted, before) == (restarted, "window")


def test_metrics_select_sum_and_group_by_label() -> None:
    m = Metrics.parse('# TYPE x counter\nx_total{code="200"} 5\nx_total{code="503"} 2\nx_total{code="504"} 1\n')
    assert m.total("x_total") == 8 and m.total("x_total", code="503") == 2
    assert m.total("absent") is None
    assert m.group("x_total", "code", lambda labels: labels["code"].startswith("5")) == {"503": 2, "504": 1}
    assert not Metrics.parse("not prometheus {{{").samples


def test_http_answers_and_failing_verbose_checks() -> None:
    answer = HttpAnswer.of(Section("[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed\n@@http 500", 22))
    assert answer.code == 500 and failing_checks(answer.body) == ["etcd"] and answer.describe() == "HTTP 500"
    refused = HttpAnswer.of(Section("curl: (7) Failed to connect\n@@http 000", 7))
    assert not refused.answered and refused.describe() == "no answer (curl exit 7: curl: (7) Failed to connect)"
    assert HttpAnswer.of(Section("@@http 000", 28)).describe() == "no answer (timed out)"


def test_certificate_dates_from_openssl() -> None:
    dates = parse_not_after("serving notAfter=Nov 30 03:45:45 2027 GMT\nfront-proxy-client missing\nx unreadable\n")
    assert dates["serving"] == 1827546345.0 and dates["front-proxy-client"] is None and dates["x"] is None


def test_excerpts_keep_errors_and_trouble_words_only() -> None:
    log = "I1130 fine\nE1130 03:48:56.1 1 wrap.go:53] boom\nW1130 x509: certificate has expired\nI1130 ok\n"
    assert excerpt(log, ("x509",)) == ("E1130 03:48:56.1 1 wrap.go:53] boom", "W1130 x509: certificate has expired")
