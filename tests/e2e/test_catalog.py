"""The whole shipped catalog as a user's CI gate runs it: `chaoskit run playbooks/` once, as one suite, overlapping
what may. That one run proves, per fault, what the catalog promises: the effect shows (each fault's own check of
the component's behaviour), the diagnosis taken while it holds names it (component and cause, past what other
faults held at the same time explain), it is reverted and the component is healthy again, and every playbook's
steady state holds after. The same run feeds the checks of the suite's verdict, JUnit file and HTML report, and
other modules' observers (tests/e2e/catalog.py) watch the cluster while their faults hold.

A fault with no playbook fails here with the file to add; a fault's diagnosis signature is its `named` attribute.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from junitparser import JUnitXml

from chaoskit.diagnosers.kit.base import Diagnosis
from chaoskit.faults.base import Fault
from chaoskit.model.factcheck import observed_words
from chaoskit.registry import FAULTS, MEASUREMENTS, load_catalog
from tests.e2e.catalog import Catalog
from tests.e2e.radius import touches

pytestmark = touches()

load_catalog()
PLAYBOOKS = sorted(Path("playbooks").glob("*.yaml"))


def test_the_catalog_passes_as_one_suite_with_one_junit_file_and_one_report(catalog: Catalog) -> None:
    failed = {
        r["playbook"]: [*r["errors"], *(e for s in r["steps"] for e in s["failures"] + s["errors"])]
        for r in catalog.record["runs"]
        if r["verdict"] != "passed"
    }
    assert catalog.returncode == 0 and catalog.record["verdict"] == "passed", failed
    assert sorted(r["playbook"] for r in catalog.record["runs"]) == sorted(p.stem for p in PLAYBOOKS)
    suites = {s.name: s for s in JUnitXml.fromfile(str(catalog.junit))}
    assert set(suites) == {p.stem for p in PLAYBOOKS}
    assert all(not case.result for s in suites.values() for case in s), "a JUnit case failed on a passed suite"
    page = catalog.html.read_text()
    assert all(p.stem in page for p in PLAYBOOKS) and "<svg" in page


def test_what_cannot_meet_overlapped_and_what_runs_alone_did(catalog: Catalog) -> None:
    runs = catalog.record["runs"]
    alone = [r for r in runs if r["radius"] == "cluster"]
    for r in alone:
        others = [
            o for o in runs if o is not r and o["started_s"] < r["finished_s"] and r["started_s"] < o["finished_s"]
        ]
        assert not others, f"{r['playbook']} must run alone; it overlapped {[o['playbook'] for o in others]}"
    shared = [r for r in runs if r["radius"] != "cluster"]
    assert any(
        a["started_s"] < b["finished_s"] and b["started_s"] < a["finished_s"]
        for a in shared
        for b in shared
        if a is not b
    ), "nothing overlapped"
    for r in shared:  # a playbook timing every node's dataplane never shared its time with a node's broken one
        timed = set().union(*(getattr(MEASUREMENTS.get(m["type"]), "every_node", set()) for m in r["measurements"]))
        for o in shared:
            broken = {f.component for f in (FAULTS.get(s["fault"]) for s in o["steps"]) if f.scope == "node"}
            if o is not r and o["started_s"] < r["finished_s"] and r["started_s"] < o["finished_s"]:
                assert not timed & broken, f"{r['playbook']} timed {timed} while {o['playbook']} broke {broken}"


@pytest.mark.parametrize("name", FAULTS.names())
def test_each_fault_takes_effect_is_named_by_the_diagnosis_and_heals(name: str, catalog: Catalog) -> None:
    fault: Fault = FAULTS.get(name)()  # type: ignore[assignment]
    steps = catalog.steps(name)
    assert steps, f"no playbook in playbooks/ runs {name}: add playbooks/{name.replace('.', '-')}.yaml"
    for run, step in steps:
        where = f"{run['playbook']} {step['step']}"
        assert not step["failures"], f"{where}: {step['failures']}"
        assert step["effect_s"] is not None and step["effect_s"] <= fault.effect_timeout, f"{where}: {step['errors']}"
        assert step["recovery_s"] is not None, f"{where}: {step['errors']}"
        facts = step["fact_check"]
        assert facts["verdict"] == "confirmed", f"{where}: fact check {facts}"
        assert all(c["ok"] for c in run["after"]), f"{where}: steady state after: {run['after']}"
        during = [d for d in run["diagnoses"] if d["when"] == "during" and d.get("step") == step["step"]]
        assert during, f"{where}: no diagnosis while the fault held"
        report = Diagnosis.from_dict(during[-1]["report"])
        ours = [
            f
            for r in report.reports
            if r.component == fault.named.component
            for f in r.findings
            if f.severity != "info" and re.search(fault.named.cause, f"{f.title} {f.probable_cause}")
        ]
        top = [f"{f.severity} {f.component}: {f.title}" for f in report.top_findings()[:3]]
        assert ours and step["named_s"] is not None, f"{where}: not named while it held; top findings {top}"
        print(
            f"\n{where}: effect {step['effect_s']:.1f}s, named {step['named_s']:.1f}s after the injection "
            f"(also held: {during[-1]['held_besides'] or 'nothing'}), healthy {step['recovery_s']:.1f}s after the "
            f"revert; fact check {facts['verdict']}, its controls {facts['seconds']:.1f}s: "
            f"{observed_words(facts)}"
        )
