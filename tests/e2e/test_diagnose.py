"""`chaoskit diagnose` on the real, healthy cluster: no false alarms, and the HTML and JUnit reports parse."""

from __future__ import annotations

import json
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from junitparser import JUnitXml

from chaoskit.diagnosers.run import components as registered
from tests.e2e.conftest import CLUSTER, chaoskit


def _diagnose(html: Path, junit: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], dict[str, list[str]]]:
    done = chaoskit(
        "diagnose", "--cluster", CLUSTER, "-o", "json", "--html", str(html), "--junit", str(junit), timeout=180
    )
    doc = json.loads(done.stdout)["diagnosis"]
    not_ok = {
        f"{r['component']}@{r['subject']}": [f"{f['severity']}: {f['title']}" for f in r["findings"]]
        for r in doc["reports"]
        if r["status"] != "ok"
    }
    return done, doc, not_ok


def test_healthy_cluster_diagnoses_ok_everywhere_and_its_reports_parse(tmp_path: Path) -> None:
    # read-only: no `cluster` fixture, which would run `cluster up`; the cluster must already be healthy
    html, junit = tmp_path / "report.html", tmp_path / "report.xml"
    done, doc, not_ok = _diagnose(html, junit)
    warned = [f for findings in not_ok.values() for f in findings if not f.startswith("info: ")]
    if warned and all(f.startswith("warning: ") for f in warned):
        # the window of 5 s caught a spell of the host's (a slow disk, a few 5xx as the tests before it wind down):
        # real warnings, seen in CI; a second look, 10 s on, must then be ok everywhere
        print(f"\na slow spell first, so a second look: {not_ok}")
        time.sleep(10)
        done, doc, not_ok = _diagnose(html, junit)
    assert done.returncode == 0 and not not_ok, (not_ok, done.stderr[-2000:])
    components = {r["component"] for r in doc["reports"]}
    assert components == set(registered()), "every registered diagnoser reports"
    assert doc["duration_s"] < 60

    HTMLParser().feed(html.read_text())
    assert "<script" not in html.read_text() and "<svg" not in html.read_text()  # no run record, no timeline
    xml = JUnitXml.fromfile(str(junit))
    assert {s.name for s in xml} == components and xml.tests > 40
