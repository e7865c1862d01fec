"""The journal exporter: a finished run's measurements become histograms, faults become counters, each counted once."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from prometheus_client import generate_latest

from chaoskit.cli import cli
from chaoskit.cluster.prometheus import free_port
from chaoskit.exporters.prometheus import (
    BUCKETS,
    Exporter,
    JournalDir,
    JournalError,
    rule_sync_node,
    serve,
)
from chaoskit.journal import Injection, Journal
from chaoskit.model.record import RunRecord
from chaoskit.model.thresholds import ThresholdResult
from chaoskit.model.timeline import MeasurementResult, Sample
from chaoskit.seams.scrape import HttpScraper, Metrics, parse

NOW = 1_800_000_000.0


def _record(run_id: str = "r1", playbook: str = "scheduler-down", verdict: str = "passed") -> dict[str, Any]:
    hpa = MeasurementResult(
        "scale-up",
        "hpa_scale_up",
        NOW - 60,
        NOW,
        samples=[
            Sample("hpa_scale_up", "scheduled", "scheduler", "web-a", NOW - 50, NOW - 49.8, 0.001),
            Sample("hpa_scale_up", "scheduled", "scheduler", "web-b", NOW - 50, NOW - 47.0, 0.001),
            Sample("hpa_scale_up", "containers_started", "kubelet", "web-a", NOW - 49.8, NOW - 45.0, 1.0),
        ],
    )
    sync = MeasurementResult(
        "sync",
        "rule_sync",
        NOW - 60,
        NOW,
        samples=[
            Sample("rule_sync", "rules_programmed", "kube-proxy", "node/chaoskit-worker", NOW - 30, NOW - 29.5, 0.1),
            Sample("rule_sync", "traffic_follows", "kube-proxy", "probe-1@chaoskit-worker2", NOW - 30, NOW - 29.0, 0.1),
        ],
    )
    rec = RunRecord(playbook, "chaoskit", "ns", "j.jsonl", run_id, NOW - 120, NOW)
    rec.verdict = verdict  # type: ignore[assignment]
    rec.measurements = [hpa, sync]
    data = rec.to_dict()
    data["thresholds"] = [  # as older records wrote them: no breached flag, a limit as text
        {"measurement": "scale-up", "stat": "p50", "stage": "scheduled", "max": 1.0, "observed": 3.0},
        {"measurement": "scale-up", "stat": "max", "stage": None, "max": "1m", "observed": 15.0},
    ]
    return data


def _injection(i: str, fault: str = "kube-proxy.freeze", node: str = "chaoskit-worker") -> Injection:
    return Injection(i, fault, node, ("kill -CONT 1",), NOW + 60)


def _journal(path: Path, record: dict[str, Any] | None = None) -> Journal:
    """A finished run: two injections, one reverted by the run, one whose revert failed; plus a third pending."""
    j = Journal(path)
    j.append("run-started", playbook="scheduler-down", run_id="r1", cluster="chaoskit")
    j.injection(_injection("a", "scheduler.down", "chaoskit-control-plane"))
    j.append("reverted", id="a")
    j.injection(_injection("b"))
    j.append("revert-failed", id="b", error="node gone")
    j.append("run-finished", verdict="passed", record=record or _record())
    return j


def _scrape(exporter: Exporter) -> Metrics:
    return Metrics.of(parse(generate_latest(exporter.registry).decode()))


def test_stage_samples_land_in_histograms_by_stage_and_component(tmp_path: Path) -> None:
    ex = Exporter(clock=lambda: NOW)
    ex.observe_journal(_journal(tmp_path / "run.jsonl").path)
    m = _scrape(ex)
    name = "chaoskit_hpa_stage_duration_seconds"
    assert m.value(f"{name}_count", stage="scheduled", component="scheduler") == 2
    assert m.value(f"{name}_bucket", stage="scheduled", component="scheduler", le="0.25") == 1  # 0.2 s
    assert m.value(f"{name}_bucket", stage="scheduled", component="scheduler", le="2.5") == 1  # 3.0 s is above
    assert m.value(f"{name}_sum", stage="containers_started", component="kubelet") == pytest.approx(4.8)


def test_rule_sync_delays_are_labelled_by_the_node_they_were_read_on(tmp_path: Path) -> None:
    ex = Exporter(clock=lambda: NOW)
    ex.observe_journal(_journal(tmp_path / "run.jsonl").path)
    m = _scrape(ex)
    name = "chaoskit_rule_sync_delay_seconds_sum"
    assert m.value(name, stage="rules_programmed", node="chaoskit-worker") == pytest.approx(0.5)
    assert m.value(name, stage="traffic_follows", node="chaoskit-worker2") == pytest.approx(1.0)
    assert rule_sync_node("node/n1") == "n1" and rule_sync_node("p@n2") == "n2" and rule_sync_node("p") == ""


def test_injections_and_reverts_are_counted_by_fault_component_and_outcome(tmp_path: Path) -> None:
    ex = Exporter(clock=lambda: NOW)
    ex.observe_journal(_journal(tmp_path / "run.jsonl").path)
    m = _scrape(ex)
    assert m.value("chaoskit_fault_injections_total", fault="scheduler.down", component="scheduler") == 1
    assert m.value("chaoskit_fault_injections_total", fault="kube-proxy.freeze", component="kube-proxy") == 1
    assert m.value("chaoskit_fault_reverts_total", fault="scheduler.down", outcome="reverted") == 1
    assert m.value("chaoskit_fault_reverts_total", fault="kube-proxy.freeze", outcome="failed") == 1


def test_a_run_is_counted_by_verdict_with_the_time_it_finished(tmp_path: Path) -> None:
    ex = Exporter(clock=lambda: NOW)
    ex.observe_journal(_journal(tmp_path / "run.jsonl").path)
    m = _scrape(ex)
    assert m.value("chaoskit_runs_total", playbook="scheduler-down", verdict="passed") == 1
    assert m.value("chaoskit_last_run_timestamp_seconds", playbook="scheduler-down", verdict="passed") == NOW


def test_breached_thresholds_are_counted_and_kept_ones_are_not(tmp_path: Path) -> None:
    ex = Exporter(clock=lambda: NOW)
    ex.observe_journal(_journal(tmp_path / "run.jsonl").path)
    m = _scrape(ex)
    breaches = m.select("chaoskit_threshold_breaches_total")
    assert [(s.labels["stage"], s.labels["stat"], s.value) for s in breaches] == [("scheduled", "p50", 1.0)]


def test_a_threshold_is_judged_by_its_own_flag_first_then_by_observed_against_its_bounds() -> None:
    def breached(threshold: dict[str, object]) -> bool:
        return ThresholdResult.from_dict(threshold).breached

    assert breached({"breached": True, "observed": 0.0, "max": 1.0})
    assert not breached({"breached": False, "observed": 9.0, "max": 1.0})
    assert breached({"observed": "2s", "max": "1s"}) and breached({"observed": 0.5, "min": 1})
    assert not breached({"observed": None, "max": 1.0}) and not breached({"observed": 1.0, "max": 1.0})


def test_reading_a_journal_again_counts_nothing_twice(tmp_path: Path) -> None:
    ex = Exporter(clock=lambda: NOW)
    path = _journal(tmp_path / "run.jsonl").path
    assert ex.observe_journal(path) == 5
    assert ex.observe_journal(path) == 0
    assert not ex.observe_record(_record())  # the same run id through the other door
    m = _scrape(ex)
    assert m.value("chaoskit_runs_total", playbook="scheduler-down", verdict="passed") == 1
    assert m.value("chaoskit_fault_injections_total", fault="scheduler.down", component="scheduler") == 1
    assert m.value("chaoskit_hpa_stage_duration_seconds_count", stage="scheduled", component="scheduler") == 2


def test_a_journal_growing_while_a_run_goes_on_is_counted_as_it_grows(tmp_path: Path) -> None:
    ex = Exporter(clock=lambda: NOW)
    j = Journal(tmp_path / "run.jsonl")
    j.injection(_injection("a"))
    ex.observe_journal(j.path)
    assert [a.fault for a in ex.active_faults()] == ["kube-proxy.freeze"]
    j.append("reverted", id="a")
    assert ex.observe_journal(j.path) == 1
    assert ex.active_faults() == []
    m = _scrape(ex)
    assert m.value("chaoskit_fault_injections_total", fault="kube-proxy.freeze", component="kube-proxy") == 1
    assert m.value("chaoskit_fault_reverts_total", fault="kube-proxy.freeze", outcome="reverted") == 1


def test_a_revert_by_chaoskit_revert_counts_as_manual(tmp_path: Path) -> None:
    ex = Exporter(clock=lambda: NOW)
    j = Journal(tmp_path / "run.jsonl")
    j.injection(_injection("a"))
    j.append("reverted", id="a", by="chaoskit revert")
    ex.observe_journal(j.path)
    assert _scrape(ex).value("chaoskit_fault_reverts_total", fault="kube-proxy.freeze", outcome="manual") == 1


def test_active_faults_are_pending_injections_until_their_deadline(tmp_path: Path) -> None:
    clock = [NOW]
    ex = Exporter(clock=lambda: clock[0])
    ex.observe_journal(_journal(tmp_path / "run.jsonl").path)  # "b" failed to revert: still pending
    m = _scrape(ex)
    labels = {"fault": "kube-proxy.freeze", "component": "kube-proxy", "node": "chaoskit-worker"}
    assert m.value("chaoskit_active_faults", **labels) == 1
    clock[0] = NOW + 61  # past the deadline the node's dead-man switch has healed it
    assert _scrape(ex).value("chaoskit_active_faults", **labels) is None


def test_two_exporters_share_no_series() -> None:
    one, two = Exporter(), Exporter()
    one.observe_record(_record())
    assert _scrape(one).value("chaoskit_runs_total", playbook="scheduler-down", verdict="passed") == 1
    assert _scrape(two).value("chaoskit_runs_total", playbook="scheduler-down", verdict="passed") is None


def test_the_last_run_time_never_goes_back_when_an_older_journal_is_read_later() -> None:
    ex = Exporter()
    ex.observe_record(_record("new"))
    older = {**_record("old"), "finished_at": NOW - 3600}
    ex.observe_record(older)
    m = _scrape(ex)
    assert m.value("chaoskit_last_run_timestamp_seconds", playbook="scheduler-down", verdict="passed") == NOW
    assert m.value("chaoskit_runs_total", playbook="scheduler-down", verdict="passed") == 2


def test_buckets_span_ten_milliseconds_to_five_minutes() -> None:
    assert BUCKETS[0] == 0.01 and BUCKETS[-2] == 300 and math.isinf(BUCKETS[-1])
    assert list(BUCKETS) == sorted(BUCKETS)


def test_the_textfile_is_written_whole_in_the_text_format(tmp_path: Path) -> None:
    ex = Exporter(clock=lambda: NOW)
    ex.observe_journal(_journal(tmp_path / "run.jsonl").path)
    out = tmp_path / "textfile" / "chaoskit.prom"
    ex.write_textfile(out)
    assert (
        Metrics.of(parse(out.read_text())).value("chaoskit_runs_total", playbook="scheduler-down", verdict="passed")
        == 1
    )
    assert os.listdir(out.parent) == ["chaoskit.prom"]  # no temporary left beside it


def test_a_journal_directory_is_read_again_only_when_a_file_changes(tmp_path: Path) -> None:
    ex = Exporter(clock=lambda: NOW)
    d = JournalDir(ex, tmp_path)
    assert d.refresh() == 0
    j = Journal(tmp_path / "one.jsonl")
    j.injection(_injection("c"))  # injection ids are unique across journals
    assert d.refresh() == 1 and len(ex.active_faults()) == 1
    assert d.refresh() == 0
    _journal(tmp_path / "two.jsonl")
    assert d.refresh() == 5
    (tmp_path / "notes.txt").write_text("not a journal")
    j.path.unlink()  # a journal removed takes its active faults with it (its counts stay)
    assert d.refresh() == 0
    assert [a.node for a in ex.active_faults()] == ["chaoskit-worker"]  # "b" of two.jsonl
    assert _scrape(ex).value("chaoskit_fault_injections_total", fault="kube-proxy.freeze", component="kube-proxy") == 2


def test_a_missing_journal_directory_is_empty_not_an_error(tmp_path: Path) -> None:
    assert JournalDir(Exporter(), tmp_path / "nope").refresh() == 0


def test_serve_answers_metrics_over_http(tmp_path: Path) -> None:
    ex = Exporter(clock=lambda: NOW)
    ex.observe_journal(_journal(tmp_path / "run.jsonl").path)
    port = free_port()
    server, _ = serve(ex, port, "127.0.0.1")
    try:
        m = Metrics.of(HttpScraper().scrape(f"http://127.0.0.1:{port}/metrics"))
    finally:
        server.shutdown()
        server.server_close()
    assert m.value("chaoskit_runs_total", playbook="scheduler-down", verdict="passed") == 1


def test_metrics_textfile_command_writes_one_file_from_several_journals(tmp_path: Path) -> None:
    _journal(tmp_path / "one.jsonl")
    _journal(tmp_path / "two.jsonl", _record("r2", verdict="deviated"))
    out = tmp_path / "chaoskit.prom"
    result = CliRunner().invoke(
        cli,
        ["metrics", "textfile", str(tmp_path / "one.jsonl"), str(tmp_path / "two.jsonl"), "--output-file", str(out)],
    )
    assert result.exit_code == 0, result.output
    m = Metrics.of(parse(out.read_text()))
    assert m.value("chaoskit_runs_total", playbook="scheduler-down", verdict="passed") == 1
    assert m.value("chaoskit_runs_total", playbook="scheduler-down", verdict="deviated") == 1


def test_a_file_that_is_not_a_journal_is_skipped_and_said_once(tmp_path: Path) -> None:
    ex = Exporter(clock=lambda: NOW)
    said: list[str] = []
    d = JournalDir(ex, tmp_path, say=said.append)
    (tmp_path / "other.jsonl").write_text('{"event": "not ours"}\n')
    _journal(tmp_path / "run.jsonl")
    assert d.refresh() == 5  # the good journal still counts
    assert d.refresh() == 0
    assert len(said) == 1 and "other.jsonl is not a chaoskit journal" in said[0]
    assert _scrape(ex).value("chaoskit_journal_read_errors_total") == 1


def test_an_unreadable_record_counts_nothing_of_its_run() -> None:
    ex = Exporter()
    bad = {**_record(), "measurements": [{"name": "m"}]}  # no type, no started_at
    with pytest.raises(JournalError, match="run 'r1': unreadable record"):
        ex.observe_record(bad)
    assert _scrape(ex).value("chaoskit_runs_total", playbook="scheduler-down", verdict="passed") is None
    assert ex.observe_record(_record())  # the run id was not spent on the bad copy


def test_metrics_textfile_refuses_a_file_that_is_not_a_journal(tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text('{"event": "not ours"}\n')
    result = CliRunner().invoke(cli, ["metrics", "textfile", str(other), "--output-file", str(tmp_path / "x.prom")])
    assert isinstance(result.exception, JournalError) and result.exception.exit_code == 2
    assert not (tmp_path / "x.prom").exists()


def test_the_resilience_score_is_the_latest_scored_runs_and_failed_probe_phases_are_counted() -> None:
    ex = Exporter()
    probe = {
        "name": "storefront",
        "weight": 1.0,
        "phases": [{"phase": "before", "ok": True}, {"phase": "during", "ok": False}],
    }
    ex.observe_record({**_record("new"), "probes": [probe]})
    ex.observe_record({**_record("old"), "finished_at": NOW - 3600})  # read later, older: the score stays
    m = _scrape(ex)
    assert m.value("chaoskit_resilience_score", playbook="scheduler-down") == 50.0
    assert (
        m.value("chaoskit_probe_phase_failures_total", playbook="scheduler-down", probe="storefront", phase="during")
        == 1
    )
