"""The scrape seam: recorded component metrics parse, Metrics finds values by labels, each scraper fails clearly."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.seams.scrape import (
    FakeScraper,
    HttpScraper,
    Metrics,
    NodeScraper,
    ScrapeError,
    parse,
)
from chaoskit.seams.shell import Completed, FakeRunner

DATA = Path(__file__).parent / "data" / "metrics"
KUBE_PROXY = (DATA / "kube-proxy.txt").read_text()
SCHEDULER = (DATA / "kube-scheduler.txt").read_text()


def test_recorded_kube_proxy_metrics_parse_into_families() -> None:
    families = {f.name: f for f in parse(KUBE_PROXY)}
    assert families["kubeproxy_sync_proxy_rules_last_timestamp_seconds"].type == "gauge"
    assert families["kubeproxy_network_programming_duration_seconds"].type == "histogram"
    assert families["kubeproxy_sync_proxy_rules_endpoint_changes"].type == "counter"


def test_value_picks_the_sample_with_the_given_labels() -> None:
    m = Metrics.of(parse(KUBE_PROXY))
    last = m.value("kubeproxy_sync_proxy_rules_last_timestamp_seconds", ip_family="IPv4")
    queued = m.value("kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds", ip_family="IPv4")
    assert last is not None and queued is not None
    assert last > 1.7e9 and abs(last - queued) < 60  # wall-clock seconds, a sync right after it was queued


def test_value_refuses_a_question_that_matches_several_samples() -> None:
    with pytest.raises(ScrapeError, match="narrow by ip_family"):
        Metrics.of(parse(KUBE_PROXY)).value("kubeproxy_sync_proxy_rules_last_timestamp_seconds")


def test_value_of_a_missing_series_is_none() -> None:
    m = Metrics.of(parse(KUBE_PROXY))
    assert m.value("kubeproxy_no_such_metric") is None
    assert m.value("kubeproxy_sync_proxy_rules_last_timestamp_seconds", ip_family="IPv5") is None


def test_counters_are_found_by_their_sample_name_with_total() -> None:
    m = Metrics.of(parse(SCHEDULER))
    scheduled = m.value("scheduler_schedule_attempts_total", result="scheduled")
    assert scheduled is not None and scheduled >= 1


def test_total_sums_across_the_labels_left_open() -> None:
    m = Metrics.of(parse(SCHEDULER))
    pending = m.select("scheduler_pending_pods")
    assert {s.labels["queue"] for s in pending} == {"active", "backoff", "gated", "unschedulable"}
    assert m.total("scheduler_pending_pods") == sum(s.value for s in pending)
    assert m.total("scheduler_pending_pods", queue="nope") is None


def test_histogram_count_matches_its_inf_bucket() -> None:
    m = Metrics.of(parse(KUBE_PROXY))
    count = m.value("kubeproxy_sync_proxy_rules_duration_seconds_count", ip_family="IPv4")
    inf = m.value("kubeproxy_sync_proxy_rules_duration_seconds_bucket", ip_family="IPv4", le="+Inf")
    assert count == inf


def test_text_that_is_not_prometheus_format_is_a_scrape_error() -> None:
    with pytest.raises(ScrapeError, match="http://x/metrics is not valid Prometheus text"):
        parse("<html>login required</html>\n", "http://x/metrics")


def test_fake_scraper_answers_recorded_text_and_refuses_unknown_urls() -> None:
    fake = FakeScraper.from_files({"http://172.18.0.3:10249/metrics": DATA / "kube-proxy.txt"})
    assert fake.scrape("http://172.18.0.3:10249/metrics")
    with pytest.raises(ScrapeError, match="connection refused"):
        fake.scrape("http://172.18.0.4:10249/metrics")
    assert fake.calls == ["http://172.18.0.3:10249/metrics", "http://172.18.0.4:10249/metrics"]


# ---- over real HTTP on localhost
@dataclass
class _Seen:
    authorization: list[str | None] = field(default_factory=list)


@pytest.fixture
def endpoint() -> Iterator[tuple[str, _Seen]]:
    seen = _Seen()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            seen.authorization.append(self.headers.get("Authorization"))
            if self.path == "/forbidden":
                self.send_response(403)
                self.end_headers()
                self.wfile.write(b"forbidden: User cannot get path /metrics")
                return
            body = KUBE_PROXY.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def test_http_scraper_fetches_and_parses_with_a_bearer_token(endpoint: tuple[str, _Seen]) -> None:
    url, seen = endpoint
    m = Metrics.of(HttpScraper(token="s3cret").scrape(f"{url}/metrics"))
    assert m.value("kubeproxy_sync_proxy_rules_iptables_total", ip_family="IPv4", table="nat") is not None
    assert seen.authorization == ["Bearer s3cret"]


def test_http_scraper_reports_the_status_and_body_of_a_refusal(endpoint: tuple[str, _Seen]) -> None:
    url, _ = endpoint
    with pytest.raises(ScrapeError, match="HTTP 403.*cannot get path /metrics") as refused:
        HttpScraper().scrape(f"{url}/forbidden")
    assert refused.value.status == 403


def test_http_scraper_names_the_url_it_could_not_reach() -> None:
    with pytest.raises(ScrapeError, match=r"GET http://127\.0\.0\.1:9/metrics"):
        HttpScraper(timeout=2).scrape("http://127.0.0.1:9/metrics")


def test_the_token_never_shows_in_a_scrapers_repr() -> None:
    assert "s3cret" not in repr(HttpScraper(token="s3cret"))
    assert "s3cret" not in repr(NodeScraper(FakeNodeExec(), Node("n", "worker"), token="s3cret"))


# ---- from inside a node
@dataclass
class _RecordingExec(FakeNodeExec):
    """FakeNodeExec that also keeps what curl got on stdin (the plain fake drops input)."""

    stdout: str = ""
    runs: list[tuple[str, tuple[str, ...], bytes | None]] = field(default_factory=list)

    def run(
        self,
        node: Node,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> Completed:
        self.runs.append((node.name, tuple(argv), input))
        return Completed((node.name, *argv), 0, self.stdout)


def test_node_scraper_runs_curl_on_the_node_with_the_token_on_stdin() -> None:
    nodes = _RecordingExec(stdout=SCHEDULER)
    scraper = NodeScraper(nodes, Node("chaoskit-control-plane", "control-plane"), token="s3cret", insecure=True)
    m = Metrics.of(scraper.scrape("https://127.0.0.1:10259/metrics"))
    assert m.value("scheduler_pending_pods", queue="active") is not None
    node, argv, stdin = nodes.runs[0]
    assert node == "chaoskit-control-plane"
    assert argv[0] == "curl" and "--insecure" in argv and argv[-1] == "https://127.0.0.1:10259/metrics"
    assert "s3cret" not in " ".join(argv)  # the node's process list would show it
    assert stdin == b"Authorization: Bearer s3cret\n"


def test_node_scraper_can_present_the_nodes_client_certificate() -> None:
    pki = "/etc/kubernetes/pki"
    scraper = NodeScraper(
        FakeNodeExec(),
        Node("cp", "control-plane"),
        ca_file=f"{pki}/ca.crt",
        client_cert=f"{pki}/c.crt",
        client_key=f"{pki}/c.key",
    )
    argv = scraper.argv("https://x")
    assert argv[argv.index("--cacert") + 1] == "/etc/kubernetes/pki/ca.crt"
    assert argv[argv.index("--cert") + 1] == "/etc/kubernetes/pki/c.crt"
    assert argv[argv.index("--key") + 1] == "/etc/kubernetes/pki/c.key"


def test_node_scraper_turns_a_curl_failure_into_a_scrape_error_naming_the_node() -> None:
    runner = FakeRunner(failures={("chaoskit-worker", "curl"): "curl: (7) Failed to connect to 127.0.0.1 port 10249"})
    scraper = NodeScraper(FakeNodeExec(runner), Node("chaoskit-worker", "worker"))
    with pytest.raises(ScrapeError, match="on node chaoskit-worker: curl exit 1: curl: \\(7\\) Failed to connect"):
        scraper.scrape("http://127.0.0.1:10249/metrics")
