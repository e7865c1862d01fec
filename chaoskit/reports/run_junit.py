"""A run (or suite of runs) as JUnit XML for CI: one testsuite per playbook; one testcase per steady-state check,
fault step, threshold and judged probe phase; the resilience score as a property of each testsuite (and of the
suite). A step fails with what deviated; chaoskit's own failure (arm, inject, revert) is an error,
so a CI view tells "the system broke" from "the tool broke"."""

from __future__ import annotations

from junitparser import Error, Failure, JUnitXml, TestCase, TestSuite

from chaoskit.figures import seconds
from chaoskit.model.factcheck import observed_words
from chaoskit.model.record import CheckRecord, RunRecord
from chaoskit.reports.common import threshold_words
from chaoskit.reports.runs import Suite, shown


def _case(name: str, classname: str, took: float, failure: str = "", error: str = "", out: str = "") -> TestCase:
    case = TestCase(name, classname=classname, time=round(took, 3))
    if error or failure:
        result = Error(error.splitlines()[0][:300], "chaoskit") if error else Failure(failure.splitlines()[0][:300])
        result.text = error or failure
        case.result = [result]
    case.system_out = out
    return case


def _steady(checks: list[CheckRecord], when: str, cls: str) -> list[TestCase]:
    return [
        _case(f"steady state {when}: {c.check}", cls, c.seconds, failure="" if c.ok else c.detail, out=c.detail)
        for c in checks
    ]


def _playbook(run: RunRecord) -> TestSuite:
    """In the order things happened: steady state before, each step, each threshold, steady state after."""
    suite = TestSuite(run.playbook)
    cls = f"chaoskit.{run.playbook}"
    cases = _steady(run.before, "before", cls)
    for s in run.steps:
        took = (s.effect_s or 0.0) + s.held_s + (s.recovery_s or 0.0)
        out = (
            f"{s.summary}\neffect after {seconds(s.effect_s)}, named by the diagnosis after "
            f"{seconds(s.named_s)}, held {s.held_words}, healthy {seconds(s.recovery_s)} after the "
            f"revert\nfact check: {s.fact_check.get('verdict', '—')} ({observed_words(s.fact_check)})"
        )
        cases.append(
            _case(
                f"step {s.step or s.fault}: {s.fault} on {s.node}",
                cls,
                took,
                failure="\n".join(s.errors or s.missing),  # why it did not hold, when chaoskit did its part
                error="\n".join(s.failures),
                out=out,
            )
        )
    for t in run.thresholds:
        cases.append(
            _case(f"threshold {threshold_words(t)}", cls, 0.0, failure=t.reason if t.breached else "", out=t.reason)
        )
    for p in run.probes:
        for ph in p.phases:
            cases.append(
                _case(f"probe {p.name} {ph.phase}", cls, 0.0, failure="" if ph.ok else ph.reason, out=ph.reason)
            )
    cases += _steady(run.after, "after", cls)
    if run.verdict in ("error", "aborted", "interrupted") and run.errors:
        cases.append(_case("run", cls, 0.0, error="\n".join(run.errors)))
    for case in cases:
        suite.add_testcase(case)
    if (scored := run.score) is not None:
        suite.add_property("resilience_score", f"{scored:g}")
    return suite


def render_run_junit(record: RunRecord | Suite) -> str:
    """JUnit XML of one run's record, or of a suite (suite.SuiteRecord)."""
    page = shown(record)
    xml = JUnitXml(f"chaoskit run {page.name}")
    for p in page.runs:
        suite = _playbook(p.record)
        if not isinstance(record, RunRecord) and page.score is not None:  # <testsuites> has no properties of its own
            suite.add_property("suite_resilience_score", f"{page.score:g}")
        xml.add_testsuite(suite)
    xml.update_statistics()  # type: ignore[no-untyped-call]
    text = xml.tostring()  # type: ignore[no-untyped-call]
    return (text.decode() if isinstance(text, bytes) else str(text)) + "\n"
