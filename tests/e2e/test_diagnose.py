"""`chaoskit diagnose` on the real, healthy cluster: no false alarms, and the HTML and JUnit reports parse."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from junitparser import JUnitXml

from chaoskit.diagnosers.run import components as registered
from tests.e2e.conftest import CLUSTER, chaoskit


def test_healthy_cluster_diagnoses_ok_everywhere_and_its_reports_parse(tmp_path: Path) -> None:
    # read-only: no `cluster` fixture, which would run `cluster up`; the cluster must already be healthy
    html, junit = tmp_path / "report.html", tmp_path / "report.xml"
    done = chaoskit("diagnose", "--cluster", CLUSTER, "-o", "json", "--html", str(html), "--junit", str(junit),
                    timeout=180)  # fmt: skip
    doc = json.loads(done.stdout)["diagnosis"]
    not_ok = {f"{r['component']}@{r['subject']}": [f["title"] for f in r["findings"]]
              for r in doc["reports"] if r["status"] != "ok"}  # fmt: skip
    assert done.returncode == 0 and not not_ok, (not_ok, done.stderr[-2000:])
    components = {r["component"] for r in doc["reports"]}
    assert components == set(registered()), "every registered diagnoser reports"
    assert doc["duration_s"] < 60

    HTMLParser().feed(html.read_text())
    assert "<script" not in html.read_text() and "<svg" not in html.read_text()  # no run record, no timeline
    xml = JUnitXml.fromfile(str(junit))
    assert {s.name for s in xml} == components and xml.tests > 40
