"""A real Prometheus beside the real cluster: it scrapes `chaoskit metrics serve` (fed a journal), kube-proxy on every
node and the authenticated control-plane endpoints, and evaluates the shipped recording rules.

Read-only towards the cluster except for the monitoring ServiceAccount and its ClusterRole(Binding).
"""

from __future__ import annotations

import math
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chaoskit.cluster import prometheus as prom
from chaoskit.cluster.cache import Cache, default_root
from chaoskit.exporters.diagnosis import LAST_LOOK
from chaoskit.journal import Injection, Journal
from chaoskit.model.moments import epoch
from chaoskit.model.record import RunRecord, StepRecord
from chaoskit.model.timeline import MeasurementResult, Sample
from chaoskit.seams.kube import Kube
from chaoskit.seams.scrape import HttpScraper, ScrapeError
from chaoskit.seams.shell import SubprocessRunner
from tests.dashboard import dashboard, queries
from tests.e2e.radius import W2, WATCHES_CLUSTER, every_node, namespace, on_node, touches

pytestmark = pytest.mark.e2e
PLAYBOOK = "e2e-prometheus"
REPO = Path(__file__).resolve().parents[2]


def _write_run(path: Path, run_id: str) -> None:
    """A finished run as `chaoskit run` journals it, with an HPA measurement and a fault still pending."""
    now = time.time()
    j = Journal(path)
    j.append("run-started", playbook=PLAYBOOK, run_id=run_id, cluster="chaoskit")
    # only ever written to this file: nothing is injected, and its deadline keeps it "active" for the test
    j.injection(Injection(f"inj-{run_id}", "kube-proxy.freeze", "chaoskit-worker", ("true",), now + 3600))
    hpa = MeasurementResult(
        "scale-up",
        "hpa_scale_up",
        now - 60,
        now,
        samples=[
            Sample("hpa_scale_up", "scheduled", "scheduler", "web-1", now - 50, now - 49.7, 0.001),
            Sample("hpa_scale_up", "scheduled", "scheduler", "web-2", now - 50, now - 48.0, 0.001),
            Sample("hpa_scale_up", "ready", "kubelet", "web-1", now - 45, now - 40, 1.0),
        ],
    )
    rule_sync = MeasurementResult(
        "dataplane",
        "rule_sync",
        now - 30,
        now,
        samples=[Sample("rule_sync", "rules_programmed", "kube-proxy", "node/chaoskit-worker", now - 9, now - 8, 0.01)],
    )
    rec = RunRecord(PLAYBOOK, "chaoskit", "ns", str(path), run_id, now - 120, now)
    rec.measurements = [hpa, rule_sync]
    rec.steps = [
        StepRecord("1-kube-proxy.freeze", "kube-proxy.freeze", "chaoskit-worker", effect_s=1.0, recovery_s=2.0)
    ]
    j.append("run-finished", verdict="passed", record=rec.to_dict())


@pytest.fixture(scope="module")
def tools() -> prom.Install:
    return prom.install(SubprocessRunner(), Cache(default_root()))


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`chaoskit metrics serve` as a user runs it, on a journal directory holding one finished run."""
    journals = tmp_path / "journals"
    journals.mkdir()
    _write_run(journals / "run-1.jsonl", "e2e-1")
    port = prom.free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chaoskit",
            "metrics",
            "serve",
            "--port",
            str(port),
            "--address",
            "127.0.0.1",
            "--journals",
            str(journals),
            "--interval",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    address = f"127.0.0.1:{port}"
    try:
        _until("the exporter to answer", lambda: _answers(f"http://{address}/metrics"), 30)
        yield address, journals
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def server(tools: prom.Install, kube: Kube, exporter: tuple[str, Path], tmp_path: Path) -> Iterator[prom.Server]:
    workdir = tmp_path / "prometheus"
    prom.prepare(kube, workdir, exporter[0])
    started = time.monotonic()
    srv = prom.start(tools, workdir)
    try:
        print(f"\nprometheus {tools.version} ready after {srv.wait_ready(60):.1f}s")
        yield srv
    finally:
        srv.stop()
        print(f"prometheus ran {time.monotonic() - started:.0f}s; log tail:\n{srv._tail(5)}")


def _answers(url: str) -> bool:
    try:
        return bool(HttpScraper(timeout=2).scrape(url))
    except ScrapeError:
        return False


def _until(what: str, check: Callable[[], Any], timeout: float, why: Callable[[], str] = lambda: "") -> Any:
    deadline = time.monotonic() + timeout
    while not (result := check()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}; {why()}")
        time.sleep(1)
    return result


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def _labels(srv: prom.Server, expr: str, label: str) -> set[str]:
    return {r["metric"].get(label, "") for r in srv.query(expr)}


@touches(every_node("kube-proxy"), namespace("chaoskit-monitoring"))
def test_prometheus_sees_the_exporter_every_kube_proxy_and_the_recording_rules(
    server: prom.Server, kube: Kube, exporter: tuple[str, Path]
) -> None:
    nodes = {n.name for n in prom.cluster_nodes(kube)}
    assert len(nodes) == 3

    def targets() -> str:
        return "; ".join(
            f"{t['labels']['job']} {t['labels']['instance']} {t['health']} {t['lastError']}" for t in server.targets()
        )

    def value(expr: str) -> float | None:
        result = server.query(expr)
        return float(result[0]["value"][1]) if len(result) == 1 else None

    # the exporter's own series, from the journal
    _until("chaoskit_runs_total", lambda: value(f'chaoskit_runs_total{{playbook="{PLAYBOOK}"}}') == 1, 90, targets)
    scheduled = 'chaoskit_hpa_stage_duration_seconds_count{stage="scheduled",component="scheduler"}'
    assert value(scheduled) == 2
    assert value('chaoskit_active_faults{fault="kube-proxy.freeze",node="chaoskit-worker"}') == 1
    assert value('chaoskit_fault_injections_total{fault="kube-proxy.freeze",component="kube-proxy"}') == 1

    # kube-proxy's sync timestamp from every node
    _until(
        "kube-proxy's last sync from every node",
        lambda: _labels(server, "kubeproxy_sync_proxy_rules_last_timestamp_seconds", "node") == nodes,
        90,
        targets,
    )

    # the recording rules, over the exporter's and kube-proxy's series
    p50 = _until(
        "the per-stage p50 rule", lambda: server.query('chaoskit:hpa_stage_duration_seconds:p50{stage="scheduled"}'), 60
    )
    assert 0.25 <= float(p50[0]["value"][1]) <= 2.5  # samples of 0.3 s and 2 s
    _until(
        "the kube-proxy sync-lag rule on every node",
        lambda: _labels(server, "kubeproxy:sync_proxy_rules_lag_seconds", "node") == nodes,
        60,
    )
    assert _labels(server, "kubeproxy:sync_proxy_rules_age_seconds", "node") == nodes

    # a journal that appears later is read by the running exporter, and the 5-minute rates see its samples
    _write_run(exporter[1] / "run-2.jsonl", "e2e-2")
    _until("the second run", lambda: value(f'sum(chaoskit_runs_total{{playbook="{PLAYBOOK}"}})') == 2, 60, targets)
    p99 = _until(
        "a finite 5-minute p99 (the rate is NaN until a sample arrives between two scrapes)",
        lambda: _finite(value('chaoskit:hpa_stage_duration_seconds:p99_5m{stage="scheduled"}')),
        60,
    )
    assert 1.0 < p99 <= 2.5  # the slower sample, 2 s, lies in the (1, 2.5] bucket

    # every authenticated endpoint accepted the ServiceAccount token (a component may be down: another test's fault)
    refused = [t for t in server.targets() if any(code in t["lastError"] for code in ("401", "403"))]
    assert not refused, targets()
    print("\n" + "\n".join(targets().split("; ")))


WORKER = "chaoskit-worker2"
CRITICAL = f'ALERTS{{alertname="ChaoskitCriticalFinding", alertstate="firing", component="kubelet", node="{WORKER}"}}'


@pytest.fixture
def diagnosis() -> Iterator[str]:
    """`chaoskit diagnose --serve` as a user runs it beside Prometheus, looking every 5 s."""
    address = f"127.0.0.1:{prom.free_port()}"
    argv = [sys.executable, "-m", "chaoskit", "diagnose", "--cluster", "chaoskit", "--serve", address]
    argv += ["--interval", "5"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _until("diagnose --serve to answer", lambda: _answers(f"http://{address}/metrics"), 60)
        yield address
    finally:
        proc.terminate()
        proc.wait(15)


@pytest.fixture
def watching(
    tools: prom.Install, kube: Kube, exporter: tuple[str, Path], diagnosis: str, tmp_path: Path
) -> Iterator[prom.Server]:
    """Prometheus as `chaoskit metrics prometheus up --diagnosis ADDR` sets it up: the runs, the cluster and the
    diagnosis scraped, the shipped rules and alerts loaded."""
    workdir = tmp_path / "prometheus"
    prom.prepare(kube, workdir, exporter[0], diagnosis=diagnosis)
    srv = prom.start(tools, workdir)
    try:
        srv.wait_ready(60)
        yield srv
    finally:
        srv.stop()


def _series(srv: prom.Server, expr: str) -> list[dict[str, Any]]:
    return [r for r in srv.query(expr) if math.isfinite(float(r["value"][1]))]


def _last_look(srv: prom.Server) -> float:
    return max((float(r["value"][1]) for r in _series(srv, LAST_LOOK)), default=0.0)


def _evaluated(srv: prom.Server) -> float:
    """When every rule group was last evaluated (the oldest of them), as Unix time."""
    groups = srv.api("rules")["groups"]
    return min((epoch(g["lastEvaluation"][:26].rstrip("Z") + "Z") or 0.0 for g in groups), default=0.0)


def _two_more_looks_judged(srv: prom.Server) -> None:
    """Two more looks of the diagnosis scraped, then every rule evaluated on the second (what a 12 s sleep stood for:
    looks every 5 s, scrapes and evaluations every 5 s), each within 30 s."""
    now = time.time()
    first = _until("a look begun after this moment, scraped", lambda: (v := _last_look(srv)) > now and v, 30)
    _until("the look after it, scraped", lambda: _last_look(srv) > first, 30)
    seen = time.time()
    _until("every rule group evaluated after it", lambda: _evaluated(srv) > seen, 30)


@touches(on_node("kubelet", W2), namespace("chaoskit-monitoring"), WATCHES_CLUSTER)
def test_a_stopped_kubelet_fires_the_critical_alert_its_revert_resolves_it_and_every_dashboard_query_answers(
    watching: prom.Server, exporter: tuple[str, Path]
) -> None:
    journals = exporter[1]
    _until(
        "the diagnosis's first look scraped and judged",
        lambda: _series(watching, f'chaoskit_component_status{{component="kubelet", node="{WORKER}"}}'),
        90,
        lambda: "; ".join(f"{t['labels']['job']} {t['health']} {t['lastError']}" for t in watching.targets()),
    )
    _two_more_looks_judged(watching)  # the alert has had its chance to fire on the healthy kubelet
    assert watching.query(CRITICAL) == [], "the kubelet's alert fires before anything was injected"
    assert watching.query('ALERTS{alertname="ChaoskitDiagnosisNotLooking"}') == []
    _write_run(journals / "run-2.jsonl", "e2e-2")  # a second run inside 5 m: the 5-minute rates have a sample

    # the kubelet stopped 45 s: the alert fires within a look, a scrape and an evaluation (about 20 s)
    inject = subprocess.Popen(
        [sys.executable, "-m", "chaoskit", "inject", "kubelet.stop", "--cluster", "chaoskit", "--node", WORKER]
        + ["--duration", "45", "--journal", str(journals / "inject.jsonl")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    held = f'chaoskit_active_faults{{fault="kubelet.stop", node="{WORKER}"}} == 1'
    try:
        _until(
            "the kubelet stopped (the injection journaled, as the exporter serves it)",
            lambda: inject.poll() is not None or _series(watching, held),
            240,
        )
        assert inject.poll() is None, f"inject ended before its fault was seen held: {inject.communicate()}"
        fired = _until("the critical alert naming the stopped kubelet", lambda: watching.query(CRITICAL), 60)
        labels = fired[0]["metric"]
        assert labels["severity"] == "critical" and not labels.get("caused_by"), labels  # Prometheus drops "" labels
        print(f"\nfiring: {labels}")
        during = dict(queries(dashboard(), "1m"))
        _until(
            "every dashboard query to answer while the fault holds",
            lambda: not [w for w, expr in during.items() if not _series(watching, expr)],
            60,
            lambda: str([w for w, expr in during.items() if not _series(watching, expr)]),
        )
        assert _series(watching, held), "the alert outlived the hold: it fired late, not on the fault"
        stdout, stderr = inject.communicate(timeout=400)
    finally:
        if inject.poll() is None:
            inject.send_signal(signal.SIGINT)  # a failed wait above: Ctrl-C, so the kubelet is put back now
            inject.wait(120)
    assert inject.returncode == 0, (inject.returncode, stdout[-2000:], stderr[-3000:])

    _until("the alert resolved after the revert", lambda: not watching.query(CRITICAL), 90)
    print("resolved after the revert")
