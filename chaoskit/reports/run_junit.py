"""A run (or suite of runs) as JUnit XML for CI: one testsuite per playbook; one testcase per steady-state check,
fault step, threshold and judged probe phase; the resilience score as a property of each testsuite (and of the
suite). A step fails with what deviated; chaoskit's own failure (arm, inject, revert) is an error,
so a CI view tells "the system broke" from "the tool broke"."""

from __future__ import annotations

from junitparser import Error, Failure, JUnitXml, TestCase, TestSuite

from chaoskit.model.factcheck import observed_words
from chaoskit.model.record import StepRecord
from chaoskit.reports.common import Record, threshold_words


def _case(name: str, classname: str, seconds: float, failure: str = "", error: str = "", out: str = "") -> TestCase:
    case = TestCase(name, classname=classname, time=round(seconds, 3))
    if error or failure:
        result = Error(error.splitlines()[0][:300], "chaoskit") if error else Failure(failure.splitlines()[0][:300])
        result.text = error or failure
        case.result = [result]
    case.system_out = out
    return case


def _steady(run: Record, when: str, cls: str) -> list[TestCase]:
    return [
        _case(
            f"steady state {when}: {c['check']}",
            cls,
            c.get("seconds") or 0.0,
            failure="" if c["ok"] else c["detail"],
            out=c["detail"],
        )
        for c in run.get(when) or []
    ]


def _s(v: object) -> str:
    return "—" if not isinstance(v, int | float) else f"{v:.1f}s"


def _playbook(run: Record) -> TestSuite:
    """In the order things happened: steady state before, each step, each threshold, steady state after."""
    name = str(run.get("playbook"))
    suite = TestSuite(name)
    cls = f"chaoskit.{name}"
    cases = _steady(run, "before", cls)
    for s in run.get("steps") or []:
        took = (s.get("effect_s") or 0.0) + (s.get("held_s") or 0.0) + (s.get("recovery_s") or 0.0)
        srec = StepRecord.from_dict(s)
        missing = srec.missing  # why it did not hold, when chaoskit did its part
        out = (
            f"{s.get('summary', '')}\neffect after {_s(s.get('effect_s'))}, named by the diagnosis after "
            f"{_s(s.get('named_s'))}, held {srec.held_words}, healthy {_s(s.get('recovery_s'))} after the "
            f"revert\nfact check: {(s.get('fact_check') or {}).get('verdict', '—')} "
            f"({observed_words(s.get('fact_check') or {})})"
        )
        cases.append(
            _case(
                f"step {s.get('step') or s['fault']}: {s['fault']} on {s['node']}",
                cls,
                took,
                failure="\n".join(s.get("errors") or missing),
                error="\n".join(s.get("failures") or []),
                out=out,
            )
        )
    for t in run.get("thresholds") or []:
        cases.append(
            _case(
                f"threshold {threshold_words(t)}",
                cls,
                0.0,
                failure=str(t.get("reason")) if t.get("breached") else "",
                out=str(t.get("reason", "")),
            )
        )
    for p in run.get("probes") or []:
        for ph in p.get("phases") or []:
            cases.append(
                _case(
                    f"probe {p['name']} {ph['phase']}",
                    cls,
                    0.0,
                    failure="" if ph["ok"] else ph["reason"],
                    out=ph["reason"],
                )
            )
    cases += _steady(run, "after", cls)
    if run.get("verdict") in ("error", "aborted", "interrupted") and run.get("errors"):
        cases.append(_case("run", cls, 0.0, error="\n".join(run["errors"])))
    for case in cases:
        suite.add_testcase(case)
    if (scored := run.get("score")) is not None:
        suite.add_property("resilience_score", f"{scored:g}")
    return suite


def render_run_junit(record: Record) -> str:
    """JUnit XML of a suite record (SuiteRecord.to_dict()) or of one run (RunRecord.to_dict())."""
    runs = record.get("runs") if "runs" in record else [record]
    xml = JUnitXml(f"chaoskit run {record.get('suite') or record.get('playbook')}")
    for run in runs or []:
        suite = _playbook(run)
        if "runs" in record and record.get("score") is not None:  # <testsuites> has no properties of its own
            suite.add_property("suite_resilience_score", f"{record['score']:g}")
        xml.add_testsuite(suite)
    xml.update_statistics()  # type: ignore[no-untyped-call]
    text = xml.tostring()  # type: ignore[no-untyped-call]
    return (text.decode() if isinstance(text, bytes) else str(text)) + "\n"
