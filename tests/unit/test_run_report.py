"""The run's report shows the fault: on the timeline, in a caption naming the stage that took the time and whose it
was, with the diagnosis open; figures rounded for people; moments in RFC 3339; a readable file name; no home path."""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree import ElementTree

import pytest
from run_report_record import T, scheduler_down

from chaoskit.cli.run import _publish, suite_json
from chaoskit.diagnosers.kit.base import Diagnosis
from chaoskit.figures import seconds
from chaoskit.model.moments import epoch, rfc3339, stamped_name
from chaoskit.progress import Progress
from chaoskit.reports import FORMATS, render
from chaoskit.reports.faultwindow import fault_windows, slowest_stage
from chaoskit.reports.run_html import render_run_html
from chaoskit.reports.run_junit import render_run_junit
from chaoskit.reports.svg import timeline_svg
from chaoskit.suite import SuiteEntry, SuiteRecord

SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.04047966003417969, "0.04s"),
        (0.001, "0.001s"),  # a clock's precision keeps its millisecond
        (0.0004, "<0.001s"),
        (0.0, "0s"),
        (1.23456, "1.23s"),
        (2.0, "2s"),
        (9.996, "10s"),
        (16.84, "16.8s"),
        (253.4, "253s"),
        (None, "—"),
        (float("nan"), "—"),
    ],
)
def test_seconds_are_rounded_for_people(value: float | None, shown: str) -> None:
    assert seconds(value) == shown


def test_no_figure_in_any_report_carries_a_floats_long_tail() -> None:
    rec = scheduler_down()
    texts = [render_run_html(rec), render_run_junit(rec)]
    texts += [render(Diagnosis.from_dict(rec.diagnoses[0]["report"]), fmt, rec) for fmt in FORMATS if fmt != "json"]
    for text in texts:
        assert "0.0404796" not in text and "4.0404796" not in text
        assert not re.search(r"\d\.\d{4,}s\b", text), re.search(r"\d\.\d{4,}s\b", text)


def test_the_caption_names_the_stage_that_took_the_time_and_says_it_was_the_fault() -> None:
    rec = scheduler_down()
    (m,) = rec.measurements
    slow = slowest_stage(m, fault_windows(rec.steps))
    assert slow is not None and (slow.stage, slow.component, slow.faulted) == ("scheduled", "scheduler", True)
    assert slow.caption().startswith("17.2s of 22.4s waiting for the scheduler, which was the fault (stage scheduled")
    page = render_run_html(rec)
    assert "17.2s of 22.4s waiting for the scheduler, which was the fault" in page


def test_the_caption_says_whose_time_it_was_without_blaming_a_fault_on_another_component() -> None:
    rec = scheduler_down("kubelet.stop")
    (m,) = rec.measurements
    slow = slowest_stage(m, fault_windows(rec.steps))
    assert slow is not None and slow.caption().startswith("17.2s of 22.4s waiting for the scheduler (stage")
    assert "which was the fault" not in render_run_html(rec)


def test_a_record_without_fault_moments_still_says_whose_fault_by_its_steps() -> None:
    rec = scheduler_down()
    rec.steps[0].injected_at = rec.steps[0].reverted_at = None
    (m,) = rec.measurements
    assert fault_windows(rec.steps) == []
    slow = slowest_stage(m, [], [s.fault for s in rec.steps])
    assert slow is not None and slow.faulted


def test_the_timeline_marks_the_fault_shades_its_held_window_and_scales_to_the_page() -> None:
    rec = scheduler_down()
    svg = ElementTree.fromstring(timeline_svg(rec.measurements[0], 640, fault_windows(rec.steps)))
    assert svg.get("width") == "100%" and svg.get("viewBox", "").startswith("0 0 640 ") and svg.get("height") is None
    texts = [t.text or "" for t in svg.iter(f"{SVG}text")]
    assert [t for t in texts if t in ("inject", "effect", "revert", "healthy")] == [
        "inject",
        "effect",
        "revert",
        "healthy",
    ]
    held = [r for r in svg.iter(f"{SVG}rect") if "held" in "".join(r.itertext())]
    assert len(held) == 1 and float(held[0].get("width", 0)) > 100  # 17 s of a 25 s axis
    assert any(t.startswith("fault held — scheduler.down") for t in texts)


def test_the_page_has_the_stage_table_beside_the_timeline_and_the_diagnosis_during_the_fault_open() -> None:
    page = render_run_html(scheduler_down())
    figure = page[page.index('<figure class="measured">') : page.index("</figure>")]
    assert '<div class="chart"><svg' in figure and '<table class="stages">' in figure
    assert '<tr class="slowest"><td>scheduled</td><td>scheduler</td>' in figure
    assert "<details open><summary>Diagnosis during <code>scheduler.down</code>" in page
    assert "named after 4.04s" in page
    assert 'width="100%"' in page.split("probe <code>storefront</code>")[1]  # the probe chart scales too


def test_the_run_record_is_rfc_3339_with_its_schema_and_the_suite_is_too() -> None:
    rec = scheduler_down()
    data = rec.to_dict()
    assert data["schemaVersion"] == "chaoskit.dev/run/v1"
    assert data["started_at"] == "2026-12-06T20:15:30.000000Z" and data["finished_at"] == "2026-12-06T20:16:18.200000Z"
    assert data["steps"][0]["injected_at"] == "2026-12-06T20:15:35.000000Z"
    assert epoch(rfc3339(T + 0.123)) == pytest.approx(T + 0.123)
    suite = SuiteRecord("two", "chaoskit", T, 2, finished_at=T + 60.0)
    suite.runs = [SuiteEntry("a.yaml", "cluster", 0.0, 48.2, rec)]
    doc = suite_json(suite)
    assert list(doc)[0] == "schemaVersion" and doc["schemaVersion"] == "chaoskit.dev/suite/v1"
    assert doc["started_at"] == "2026-12-06T20:15:30.000000Z" and doc["runs"][0]["started_at"] == data["started_at"]


def test_a_report_is_named_by_its_playbook_and_a_readable_utc_date() -> None:
    assert stamped_name("scheduler-down", T, ".html") == "scheduler-down-2026-12-06T201530Z.html"
    assert stamped_name("3 paths", T, ".html") == "3-paths-2026-12-06T201530Z.html"


def test_no_report_names_the_home_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "home" / "someone"
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    rec = scheduler_down(home=home)
    texts = [render_run_html(rec), render_run_junit(rec)]
    texts += [render(Diagnosis.from_dict(rec.diagnoses[0]["report"]), f, rec) for f in ("html", "markdown", "table")]
    for text in texts:
        assert str(home) not in text and str(tmp_path) not in text
    assert "~/.local/state/chaoskit/journals/scheduler-down-2026-12-06T201530Z.jsonl" in texts[0]
    rec.journal = str(work / "journals" / "j.jsonl")  # under the working directory: relative to it
    assert "<code>journals/j.jsonl</code>" in render_run_html(rec)


def test_chaoskit_run_prints_the_reports_path_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    rec = scheduler_down()
    rec.journal = str(tmp_path / "j.jsonl")
    suite = SuiteRecord("scheduler-down", "chaoskit", T, 1, finished_at=T + 48.2)
    suite.runs = [SuiteEntry("scheduler-down.yaml", "cluster", 0.0, 48.2, rec)]
    html = tmp_path / "reports" / stamped_name("scheduler-down", T, ".html")
    _publish(suite, False, None, html, "table", Progress())
    assert capsys.readouterr().out.splitlines()[-1] == str(html) and html.read_text().startswith("<!DOCTYPE html>")


def test_a_mark_label_at_an_edge_of_the_timeline_stays_inside_it() -> None:
    from chaoskit.reports.svg import _mark_labels

    drawn = _mark_labels([("inject", 0.0), ("revert", 500.0), ("healthy", 958.0)], lambda t: t, 40, 960)
    assert [re.search(r'text-anchor="(\w+)"', d).group(1) for d in drawn] == ["start", "middle", "end"]  # type: ignore[union-attr]
