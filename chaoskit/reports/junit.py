"""The diagnosis as JUnit XML for CI: one testsuite per component, one testcase per check (and node).

A check fails when a critical or warning finding rests on it (its entity and root cause in the failure's text); info
findings go to the testcase's system-out; a check whose source did not answer (API-side evidence while the API server
is down) or whose look could not be made is skipped, not failed.
"""

from __future__ import annotations

from typing import Any

from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite

from chaoskit.diagnosers.kit.base import ComponentReport, Diagnosis, Finding
from chaoskit.model.record import RunRecord
from chaoskit.reports.common import observed


def _case(report: ComponentReport, check: str, findings: list[Finding], detail: str, available: bool) -> TestCase:
    case = TestCase(f"{check} [{report.subject}]", classname=f"chaoskit.{report.component}.{report.subject}")
    failing = [f for f in findings if f.severity != "info" and f.judged]
    unjudged = [f for f in findings if not f.judged]  # a look that could not be made: no verdict, so no failure
    if failing:
        results: list[Any] = []
        for f in failing:
            failure = Failure(f.title, f.severity)
            failure.text = "\n".join(
                [
                    f"cause: {f.probable_cause}",
                    *([f"entity: {', '.join(f.entities)}"] if f.entities else []),
                    *([f"because of: {f.caused_by}"] if f.caused_by else []),
                    *(f"fix: {s}" for s in f.remediation),
                ]
            )
            results.append(failure)
        case.result = results
    elif unjudged or not available:
        case.result = [Skipped((unjudged[0].probable_cause if unjudged else detail)[:300] or "evidence unavailable")]
    notes = [f"{f.title}: {f.probable_cause}" for f in findings if f.severity == "info"]
    case.system_out = "\n".join([detail, *notes]).strip()
    return case


def render_junit(diagnosis: Diagnosis, record: RunRecord | None = None) -> str:
    xml = JUnitXml(f"chaoskit diagnose {diagnosis.cluster}")
    suites: dict[str, TestSuite] = {}
    for report in diagnosis.reports:
        suite = suites.get(report.component)
        if suite is None:
            suite = suites[report.component] = TestSuite(report.component)
            xml.add_testsuite(suite)
        checks = {e.check: e for e in report.checks}
        for f in report.findings:  # a finding citing a check the report did not list still gets its testcase
            for check in f.checks:
                checks.setdefault(check, f.evidence[f.checks.index(check)])
        for check, e in checks.items():
            cited = [f for f in report.findings if check in f.checks]
            detail = observed(e) if e.available else str(e.observed.get("error", ""))
            suite.add_testcase(_case(report, check, cited, detail, e.available))
    xml.update_statistics()  # type: ignore[no-untyped-call]
    text = xml.tostring()  # type: ignore[no-untyped-call]
    return (text.decode() if isinstance(text, bytes) else str(text)) + "\n"
