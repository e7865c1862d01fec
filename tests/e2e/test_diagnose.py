"""`chaoskit diagnose` on the real, healthy cluster: no false alarms, and the HTML and JUnit reports parse."""

from __future__ import annotations

import json
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from junitparser import JUnitXml

from chaoskit import workloads
from chaoskit.diagnosers.run import components as registered
from chaoskit.seams.kube import Kube
from tests.e2e.conftest import CLUSTER, chaoskit, of_the_host
from tests.e2e.radius import WATCHES_CLUSTER, WORKLOAD, namespace, touches


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


@touches(WATCHES_CLUSTER)
def test_healthy_cluster_diagnoses_ok_everywhere_and_its_reports_parse(tmp_path: Path) -> None:
    # read-only: no `cluster` fixture, which would run `cluster up`; the cluster must already be healthy
    html, junit = tmp_path / "report.html", tmp_path / "report.xml"
    done, doc, not_ok = _diagnose(html, junit)
    warned = [f for r in doc["reports"] for f in r["findings"] if f["severity"] != "info"]
    if warned and all(of_the_host(f) for f in warned):
        # the 1 s window caught a slow spell the diagnosis lays on this host (etcd's disk, a busy CPU): real
        # warnings, seen in CI; a second look, 10 s on, must then be ok everywhere. Anything else fails at once.
        print(f"\na slow spell of the host's first, so a second look: {not_ok}")
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


@touches(namespace("e2e-subject-unavailable"), WORKLOAD)
def test_your_subject_not_available_with_every_component_ok_is_named_with_its_cause(kube: Kube, ns: str) -> None:
    # an image this offline cluster cannot pull: the pods never start, and no Kubernetes component is at fault
    broken = workloads.web_deployment(ns, "shop")
    broken["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.invalid/shop:never"
    broken["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "IfNotPresent"
    kube.apply(broken)
    kube.apply(workloads.service(ns, "shop"))
    kube.wait(
        "the Deployment to report itself not Available",
        lambda: any(
            c["type"] == "Available" and c["status"] == "False"
            for c in kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments/shop").get("status", {}).get("conditions")
            or []
        ),
        60,
    )
    done = chaoskit("diagnose", "--cluster", CLUSTER, "--subject", f"{ns}/shop", "-o", "json", timeout=180)
    doc = json.loads(done.stdout)["diagnosis"]
    (mine,) = [r for r in doc["reports"] if r["component"] == "subject"]
    titles = [f"{f['severity']}: {f['title']}" for f in mine["findings"]]
    assert mine["subject"] == f"Deployment {ns}/shop" and mine["status"] == "failed", titles
    assert f"critical: Deployment {ns}/shop is not Available (0/1 available)" in titles
    assert f"critical: Service {ns}/shop has no ready endpoint" in titles
    assert done.returncode == 1
