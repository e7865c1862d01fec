"""The pieces every diagnoser stands on: status rules, the registry, node scripts framed into sections, bounded
API reads with their breaker, metrics and histogram quantiles, HTTP answers, certificate dates, log excerpts."""

from __future__ import annotations

import subprocess
import threading
from typing import Any

import pytest
from diagnose_evidence import FrozenKube

from chaoskit.diagnosers.kit.base import (
    DIAGNOSERS,
    ComponentReport,
    Diagnosis,
    Evidence,
    Finding,
    by_severity,
    status_of,
)
from chaoskit.diagnosers.kit.budget import Budget, Outcome, leashed
from chaoskit.diagnosers.kit.common import HttpAnswer, excerpt, failing_checks
from chaoskit.diagnosers.kit.sources import (
    ApiAccess,
    Fetched,
    Section,
    Sources,
    parse_sections,
    section_script,
    short_reason,
    window_wait,
)
from chaoskit.diagnosers.run import components
from chaoskit.env import Env
from chaoskit.errors import DuplicateName, UnknownName
from chaoskit.seams.certs import DAY, expiry, parse_not_after
from chaoskit.seams.kube import FakeKube, Kube, KubeError
from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.seams.scrape import Histogram, Metrics, windowed
from chaoskit.seams.shell import Completed, FakeRunner

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
        "containerd",
        "metrics-server",
        "dns",
        "workloads",
        "reverts",
    ]
    assert components(["containerd", "apiserver"]) == ["apiserver", "containerd"]
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
    kube = FrozenKube()
    try:
        got = ApiAccess(kube, timeout=0.2).fetch("/api/v1/nodes")
        assert not kube.release.is_set()  # the read returned while the request still hung: it was cut, not awaited
        assert "no answer within 0.2s" in got.error
    finally:
        kube.release.set()


def test_api_reads_are_time_boxed_in_the_client_too() -> None:
    api = ApiAccess(FakeKube(), timeout=4)
    assert api.kube.timeout == (3.0, 4) and Kube(api=None).timeout is None  # (connect, read): the client's pair


def test_while_the_probe_hangs_reads_wait_for_its_answer_and_a_dead_server_costs_one_timeout() -> None:
    kube = FrozenKube()
    try:
        api = ApiAccess(kube, timeout=0.2)
        said: list[tuple[Fetched, str]] = []
        api.probe("/readyz", then=lambda got, down: said.append((got, down)))
        reads = [api.fetch(f"/api/v1/{kind}") for kind in ("nodes", "pods", "services")]
        assert kube.calls == [("GET", "/readyz")]  # no read asked the server that had not answered the probe
        assert all(r.error == "API server unreachable: GET /readyz: no answer within 0.2s" for r in reads)
        assert api.down == said[0][1] == "GET /readyz: no answer within 0.2s"
    finally:
        kube.release.set()


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_budget_caps_every_wait_by_its_deadline() -> None:
    clock = FakeClock()
    budget = Budget(10, clock)
    assert budget.cap(5) == 5 and budget.remaining() == 10
    clock.now += 7
    assert budget.cap(5) == 3
    clock.now += 7
    assert budget.remaining() == 0 and budget.cap(5) == 0


def test_a_spent_budget_asks_neither_the_api_nor_the_nodes() -> None:
    clock = FakeClock()
    budget = Budget(10, clock)
    kube, runner = FakeKube({"/api/v1/nodes": {"items": []}}), FakeRunner()
    src = Sources.of(Env(kube, FakeNodeExec(runner), "chaoskit"), "cp", ("cp",), budget=budget)
    clock.now += 20
    got = src.api.fetch("/api/v1/nodes")
    assert "time budget is spent" in got.error and not src.api.down  # no verdict on the API server
    sections = src.sections("cp", {"a": "true"})
    assert "time budget is spent" in sections["a"].output and sections["a"].rc is None
    assert kube.calls == [] and runner.calls == []


def test_a_node_script_gets_what_is_left_of_the_budget() -> None:
    clock = FakeClock()
    timeouts: list[float | None] = []

    class Recording(FakeNodeExec):
        def run(
            self, node: Node, argv: Any, *, input: bytes | None = None, timeout: float | None = None, check: bool = True
        ) -> Any:
            timeouts.append(timeout)
            return super().run(node, argv, input=input, timeout=timeout, check=check)

    src = Sources.of(Env(FakeKube(), Recording(), "chaoskit"), "cp", ("cp",), budget=Budget(12, clock))
    clock.now += 4
    src.sections("cp", {"a": "true"}, timeout=60)
    src.sections("cp", {"a": "true"}, timeout=5)
    assert timeouts == [8, 5]
    assert "timeout -k 1 6.5 sh" in src.env.nodes.calls[0][-1]  # the script ends its commands before we stop waiting


def test_a_leash_gives_up_on_a_hung_call_and_keeps_the_others() -> None:
    release = threading.Event()
    try:
        quick, hung, broken = leashed([lambda: 1, lambda: release.wait(30), lambda: 1 // 0], 0.1)
        assert quick == Outcome(1) and not hung.finished and isinstance(broken.error, ZeroDivisionError)
        assert not release.is_set()
    finally:
        release.set()


def test_commands_run_side_by_side_and_a_hung_one_is_cut_off_without_the_others() -> None:
    script = section_script({"hangs": "echo started; sleep 30", "quick": "echo done"}, limit=0.5)
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True, timeout=20).stdout
    got = parse_sections(out)
    assert got["quick"] == Section("done", 0)
    assert got["hangs"].rc is None and got["hangs"].text == "started\nchaoskit: cut off after 0.5s"


def test_a_chain_stops_at_its_first_failure() -> None:
    chain = ("before", "wait", "after")
    script = section_script(
        {"before": "echo no; exit 7", "wait": "sleep 30", "after": "echo x", "other": "true"}, [chain]
    )
    got = parse_sections(subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=20).stdout)
    assert got["before"] == Section("no", 7) and got["other"] == Section("", 0)
    assert got["wait"] == got["after"] == Section("skipped: before failed", None)
    script = section_script({"before": "echo 1", "wait": "true", "after": "echo 2"}, [chain])
    got = parse_sections(subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=20).stdout)
    assert [got[n] for n in chain] == [Section("1", 0), Section("", 0), Section("2", 0)]


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


def test_certificate_expiry_is_judged_in_one_place() -> None:
    now = 1_000_000.0
    assert expiry(now, now, 7) == "expired" and expiry(now - 1, now, 7) == "expired"
    assert expiry(now + 6.9 * DAY, now, 7) == "expiring" and expiry(now + 7 * DAY, now, 7) == ""
    assert expiry(None, now, 7) == ""  # unreadable: no verdict


def test_excerpts_keep_errors_and_trouble_words_only() -> None:
    log = "I1130 fine\nE1130 03:48:56.1 1 wrap.go:53] boom\nW1130 x509: certificate has expired\nI1130 ok\n"
    assert excerpt(log, ("x509",)) == ("E1130 03:48:56.1 1 wrap.go:53] boom", "W1130 x509: certificate has expired")


def test_a_window_counts_from_its_chains_start_so_a_slow_first_scrape_does_not_lengthen_it() -> None:
    left = window_wait(5).replace("sleep ", "echo ", 1)  # what it would sleep, printed instead
    started_8s_ago = f"chain_start=$(($(date +%s) - 8)); {left}"
    assert subprocess.run(["sh", "-c", started_8s_ago], capture_output=True, text=True).stdout.strip() == "0"
    started_now = f"chain_start=$(date +%s.%N); {left}"
    assert 0 < float(subprocess.run(["sh", "-c", started_now], capture_output=True, text=True).stdout) <= 5


def test_a_process_look_cut_off_by_a_loaded_node_gives_no_verdict_but_a_finished_empty_one_says_not_running() -> None:
    from chaoskit.diagnosers.kit.base import UNCOLLECTED
    from chaoskit.diagnosers.kit.sources import NOT_RUN, Section
    from chaoskit.diagnosers.kit.staticpod import ProcessState, assess_process

    def look(process: Section, manifest: Section) -> list[tuple[str, str]]:
        sections = {"process": process, "manifest": manifest, "containers": NOT_RUN, "logs": NOT_RUN}
        state = ProcessState.of("kube-apiserver", sections)
        found = assess_process("apiserver", "cp", state, frozen_effect="", down_effect="")
        return [(f.severity, f.title) for f in found.findings]

    cut = Section("chaoskit: cut off after 10.5s", None)
    # before: "not running: its static-pod manifest is not in /etc/kubernetes/manifests", of a healthy API server
    assert look(cut, cut) == [("warning", UNCOLLECTED)]
    assert look(Section("could not run on cp: timed out", None), NOT_RUN) == [("warning", UNCOLLECTED)]
    # a search that ended finding nothing is evidence: the process is gone and so is its manifest
    gone = look(Section("", 1), Section("", 0))
    assert gone == [
        ("critical", "kube-apiserver is not running: its static-pod manifest is not in /etc/kubernetes/manifests")
    ]
    # the manifest search cut off: the process is still gone, where its manifest is stays unknown
    assert look(Section("", 1), cut) == [("critical", "kube-apiserver is not running")]


def test_a_health_answer_cut_off_by_a_loaded_node_gives_no_verdict_but_a_refused_one_is_critical() -> None:
    import diagnose_evidence as evidence

    from chaoskit.diagnosers.apiserver import ApiServerDiagnoser
    from chaoskit.diagnosers.controller_manager import ControllerManagerDiagnoser
    from chaoskit.diagnosers.etcd import EtcdDiagnoser
    from chaoskit.diagnosers.kit.base import UNCOLLECTED
    from chaoskit.diagnosers.kube_proxy import KubeProxyDiagnoser
    from chaoskit.diagnosers.kubelet import KubeletDiagnoser
    from chaoskit.diagnosers.scheduler import SchedulerDiagnoser

    # what a catalog run saw at its start: "The API server does not answer on 127.0.0.1:6443" of a healthy one
    cut = HttpAnswer(0, "could not run on cp: timed out after 11.99s: command failed (exit -1):", None)
    refused = HttpAnswer(0, "curl: (7) Failed to connect to 127.0.0.1 port 6443: Connection refused", 7)
    cases: list[tuple[Any, Any, str]] = [
        (ApiServerDiagnoser(), evidence.apiserver, "readyz"),
        (EtcdDiagnoser(), evidence.etcd, "health"),
        (SchedulerDiagnoser(), evidence.scheduler, "healthz"),
        (ControllerManagerDiagnoser(), evidence.controller_manager, "healthz"),
        (KubeletDiagnoser(), evidence.kubelet, "healthz"),
        (KubeProxyDiagnoser(), evidence.kube_proxy, "healthz"),
    ]
    for diagnoser, ev, field in cases:
        unread = diagnoser.analyze(ev(**{field: cut}))
        assert [(f.severity, f.title) for f in unread] == [("warning", UNCOLLECTED)], diagnoser.component
        assert "could not look at" in unread[0].probable_cause and "11.99s" in unread[0].probable_cause
        refusal = diagnoser.analyze(ev(**{field: refused}))
        assert any(f.severity == "critical" for f in refusal), diagnoser.component
    # kubelet's systemctl look cut off: no "kubelet is not running (systemd: unknown)"
    service = KubeletDiagnoser().analyze(evidence.kubelet(service="unknown", unread="cut off after 10.5s"))
    assert [(f.severity, f.title) for f in service] == [("warning", UNCOLLECTED)]


def test_scripts_side_by_side_run_at_once_so_a_look_costs_the_slowest_not_their_sum() -> None:
    import threading

    from chaoskit.diagnosers.kit.sources import _MARK, _RC

    both = threading.Barrier(2, timeout=5)  # each script waits for the other to start: never one after the other

    def responder(argv: tuple[str, ...]) -> Completed:
        both.wait()
        node = next(a for a in argv if a in ("w", "cp"))
        return Completed(argv, 0, f"{_MARK}who\n{node}\n\n{_RC}0\n")

    src = Sources.of(Env(FakeKube(), FakeNodeExec(FakeRunner(responder=responder)), "chaoskit"), "cp", ("cp", "w"))
    here, there = src.side_by_side(("w", {"who": "hostname"}), ("cp", {"who": "hostname"}))
    assert (here["who"].text, there["who"].text) == ("w", "cp")


class LocalShell(FakeNodeExec):
    """A node whose scripts run in this machine's sh: the framing, the side-by-side jobs and exit codes for real."""

    def run(
        self, node: Node, argv: Any, *, input: bytes | None = None, timeout: float | None = None, check: bool = True
    ) -> Any:
        self.runner.calls.append((node.name, *argv))
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
        return Completed(tuple(argv), done.returncode, done.stdout, done.stderr)


def test_a_probe_that_timed_out_in_the_crowd_is_asked_alone_and_its_second_answer_counts(tmp_path: Any) -> None:
    first = tmp_path / "asked"
    # times out (curl's 28) the first time it is asked, answers after: a healthy endpoint held up by the look's crowd
    crowded = f"if [ -e {first} ]; then echo ok; else touch {first}; exit 28; fi"
    nodes = LocalShell()
    src = Sources.of(Env(FakeKube(), nodes, "chaoskit"), "cp", ("cp",))
    got = src.sections("cp", {"crowded": crowded, "hangs": "echo no; exit 28", "fine": "echo fine"})
    assert got["crowded"] == Section("ok", 0)
    assert got["hangs"] == Section("no", 28)  # a component that really hangs times out again, and says so
    assert got["fine"] == Section("fine", 0)
    again = nodes.calls[1][-1]
    assert len(nodes.calls) == 2 and "exit 28" in again and "echo fine" not in again  # only the timed out, once


def test_a_timed_out_step_of_a_chain_is_not_asked_again() -> None:
    nodes = LocalShell()
    src = Sources.of(Env(FakeKube(), nodes, "chaoskit"), "cp", ("cp",))
    got = src.sections("cp", {"before": "exit 28", "after": "echo 2"}, chains=[("before", "after")])
    assert got["before"].rc == 28 and len(nodes.calls) == 1
