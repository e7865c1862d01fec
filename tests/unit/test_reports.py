"""Reports from one Diagnosis (and a run record): the HTML is one self-contained file whose SVG shows the HPA
critical path, the JUnit parses back with a testcase per check, and every format carries the findings."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from xml.etree import ElementTree

from diagnose_evidence import DOWN, apiserver, http, kubelet, text
from junitparser import Failure, JUnitXml, Skipped

from chaoskit.diagnosers.apiserver import ApiServerDiagnoser
from chaoskit.diagnosers.kit.base import ComponentReport, Diagnosis, Evidence, Finding
from chaoskit.diagnosers.kubelet import KubeletDiagnoser
from chaoskit.model.record import ProbeRecord, RunRecord
from chaoskit.model.timeline import HPA_STAGES, MeasurementResult, Sample
from chaoskit.reports import FORMATS, render
from chaoskit.reports.svg import timeline_svg


def diagnosis() -> Diagnosis:
    body = text("apiserver/readyz.txt").replace("[+]etcd ok", "[-]etcd failed: reason withheld")
    api = ApiServerDiagnoser().report(apiserver(readyz=http(body, 500)), "chaoskit-control-plane")
    worker = KubeletDiagnoser().report(kubelet(node_obj=DOWN), "chaoskit-worker")
    odd = Finding(
        "warning",
        "containerd",
        "a <script>alert(1)</script> title",
        "cause & effect",
        (Evidence("cri", "crictl info", {"answers": True}),),
        ("do <this>",),
    )
    runtime = ComponentReport("containerd", "chaoskit-worker", "degraded", (odd,), (Evidence("cri", "crictl info"),))
    return Diagnosis("chaoskit", (api, worker, runtime), 1796010840.0, 7.5)


def hpa_record() -> RunRecord:
    m = MeasurementResult("scale-up", "hpa_scale_up", started_at=1796010000.0)
    for i, pod in enumerate(("web-abc12", "web-def34")):
        t = 1796010001.0 + i * 0.5
        for stage in HPA_STAGES:
            m.samples.append(Sample("hpa_scale_up", stage.name, stage.component, pod, t, t + 0.4, 0.001))
            t += 0.4
    return RunRecord.from_dict(
        {
            "playbook": "hpa-under-scheduler-down",
            "run_id": "ab12cd34",
            "verdict": "deviated",
            "steps": [
                {
                    "step": "stop-scheduler",
                    "fault": "scheduler.down",
                    "node": "chaoskit-control-plane",
                    "summary": "move the manifest",
                    "effect_s": 2.1,
                    "held_s": 30.0,
                    "recovery_s": 5.2,
                    "errors": [],
                }
            ],
            "measurements": [m.to_dict()],
            "thresholds": [],
            "diagnoses": [],
            "errors": [],
        }
    )


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.urls: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.urls += [v or "" for k, v in attrs if k in ("src", "href", "xlink:href", "action")]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    return page


def test_html_is_one_self_contained_file() -> None:
    page = parse(render(diagnosis(), "html", hpa_record()))
    assert "style" in page.tags and "script" not in page.tags and "link" not in page.tags
    assert all("://" not in u and not u.startswith("//") for u in page.urls), page.urls
    assert page.tags[:2] == ["html", "head"]


def test_html_escapes_what_it_shows() -> None:
    html = render(diagnosis(), "html")
    assert "<script>alert" not in html and "a &lt;script&gt;alert(1)&lt;/script&gt; title" in html
    assert "do &lt;this&gt;" in html


def test_html_has_the_findings_and_the_checks() -> None:
    page = parse(render(diagnosis(), "html"))
    words = " ".join(page.text)
    assert "/readyz: [-]etcd failed (etcd connection)" in words
    assert "API-side evidence unavailable (node-ready)" in words
    assert "svg" not in page.tags  # no measurement, no timeline


def test_html_draws_the_hpa_critical_path_with_one_row_per_pod_and_a_legend_of_owners() -> None:
    html = render(diagnosis(), "html", hpa_record())
    page = parse(html)
    assert page.tags.count("svg") == 1
    assert page.tags.count("rect") == 2 * len(HPA_STAGES) + len(HPA_STAGES)  # segments, then legend swatches
    words = " ".join(page.text)
    assert "web-abc12" in words and "web-def34" in words
    assert "scheduled — scheduler" in words and "rules_programmed — kube-proxy" in words
    assert "hpa-under-scheduler-down" in words and "stop-scheduler" in words


def test_the_timeline_is_well_formed_svg() -> None:
    m = hpa_record().measurements[0]
    svg = ElementTree.fromstring(timeline_svg(m))
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    titles = [t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}title")]
    assert "scheduled (scheduler): 0.4s ±0.001s" in titles


def test_junit_parses_back_with_a_suite_per_component_and_a_case_per_check() -> None:
    d = diagnosis()
    xml = JUnitXml.fromstring(render(d, "junit"))
    suites = {s.name: s for s in xml}
    assert list(suites) == ["apiserver", "kubelet", "containerd"]
    assert len(list(suites["apiserver"])) == len(d.reports[0].checks)
    results = {case.name: case.result for suite in xml for case in suite}
    readyz = results["readyz [chaoskit-control-plane]"]
    assert len(readyz) == 1 and isinstance(readyz[0], Failure) and readyz[0].type == "critical"
    assert results["livez [chaoskit-control-plane]"] == []
    skipped = results["node-ready [chaoskit-worker]"]
    assert len(skipped) == 1 and isinstance(skipped[0], Skipped)
    assert isinstance(results["cri [chaoskit-worker]"][0], Failure)
    assert xml.failures == 2 and xml.skipped == 1


def test_json_carries_the_diagnosis_and_the_run() -> None:
    d = diagnosis()
    doc = json.loads(render(d, "json", hpa_record()))
    assert Diagnosis.from_dict(doc["diagnosis"]) == d
    assert doc["run"]["playbook"] == "hpa-under-scheduler-down"
    # a versioned document, its moment in RFC 3339 as the run record's; an older document's epoch seconds read back
    assert doc["schemaVersion"] == "chaoskit.dev/diagnosis/v1"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", doc["diagnosis"]["collected_at"])
    older = {**doc["diagnosis"], "collected_at": d.collected_at}
    assert Diagnosis.from_dict(older).collected_at == d.collected_at


def test_markdown_lists_findings_with_cause_evidence_and_numbered_remediation() -> None:
    md = render(diagnosis(), "markdown", hpa_record())
    assert md.startswith("# chaoskit diagnosis of `chaoskit`: failed")
    assert "### ✗ critical: apiserver on chaoskit-control-plane: /readyz: [-]etcd failed (etcd connection)" in md
    assert "**Probable cause:** the API server cannot reach etcd" in md
    assert "1. curl http://127.0.0.1:2381/health" in md
    assert "| scheduled | 2 |" in md


def test_the_table_names_every_component_and_finding() -> None:
    table = render(diagnosis(), "table", hpa_record())
    assert "chaoskit diagnose chaoskit — failed" in table
    for word in ("apiserver", "kubelet", "containerd", "✗ failed", "/readyz: [-]etcd failed", "measurement scale-up"):
        assert word in table


def test_every_format_renders() -> None:
    assert FORMATS == ("table", "json", "markdown", "html", "junit")
    assert all(render(diagnosis(), f).strip() for f in FORMATS)


def test_html_says_a_threshold_in_words_with_its_result() -> None:
    from chaoskit.model.thresholds import ThresholdResult

    record = hpa_record()
    t = ThresholdResult("scale-up", "max", "total", None, 120.0, 33.3, False, "max of total is 33.300s, within limits")
    record.thresholds = [t]
    text = " ".join(parse(render(diagnosis(), "html", record)).text)
    assert "scale-up: max of total ≤ 120s" in text and "held" in text and "within limits" in text
    assert "{" not in text.split("scale-up: max")[1][:200]  # no raw dict


def test_a_probe_chart_draws_answers_by_latency_passes_without_a_value_green_and_failures_red() -> None:
    from chaoskit.reports.svg import probe_svg

    http = {
        "name": "shop",
        "kind": "http",
        "samples": [[10.0, True, 0.05, "HTTP 200"], [11.0, False, None, "HTTP 502"]],
    }
    cond = {"name": "up", "kind": "k8s", "samples": [[10.0, True, None, "Available is True"]]}
    windows = {"during": [[10.5, 11.5]], "effects": [10.5]}
    chart = probe_svg(ProbeRecord.from_dict(http), windows)
    assert chart.count('fill="#0072B2"') == 1 and chart.count('fill="#cf222e"') == 1 and "fault held" in chart
    drawn = probe_svg(ProbeRecord.from_dict(cond), windows)
    assert 'fill="#2da44e"' in drawn and 'fill="#cf222e"' not in drawn


def test_a_rule_sync_timeline_has_a_row_per_change_and_node() -> None:
    samples = [
        Sample("rule_sync", "rules_programmed", "kube-proxy", f"{change}@{node}", t0, t0 + 0.5 + i / 10, 0.15, change)
        for change, t0 in ((1, 1000.0), (2, 1010.0))
        for i, node in enumerate(("chaoskit-worker", "chaoskit-worker2"))
    ]
    m = MeasurementResult("rule-sync", "rule_sync", 1000.0, samples=samples)
    svg = ElementTree.fromstring(timeline_svg(m))
    texts = [t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert "change 2 · chaoskit-worker2" in texts and "rules_programmed — kube-proxy" in texts
    assert any("2 change(s) on 2 node(s)" in t for t in texts)


def test_a_resync_timeline_counts_deployments_names_its_own_owners_and_orders_rows_as_people_count() -> None:
    samples = [
        Sample("controller_resync", stage, owner, name, t, t + 1.0, 0.5)
        for name in ("resync-10", "resync-2", "resync-1")
        for stage, owner, t in (
            ("deployment_synced", "controller-manager", 1000.0),
            ("replicas_created", "controller-manager", 1001.0),
            ("ready", "scheduler", 1002.0),
        )
    ]
    svg = ElementTree.fromstring(
        timeline_svg(MeasurementResult("resync", "controller_resync", 1000.0, samples=samples))
    )
    texts = [t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert any("3 Deployment(s)" in t for t in texts)
    assert [t for t in texts if t.startswith("resync-")] == ["resync-1", "resync-2", "resync-10"]
    assert "ready — scheduler" in texts  # the measurement's owner, not HPA-to-Ready's kubelet
