"""deploy/prometheus/rules.yml's diagnosis alerts read only what `chaoskit diagnose --serve` serves, and each names
the root cause: its component, node and entity as labels, the finding in its summary. (promtool evaluates them in
tests/unit/data/prometheus/rules_test.yml.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from series_names import series_names

from chaoskit.exporters.diagnosis import FINDING, SERIES

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "rules.yml"
PROMETHEUS_OWN = {"up"}  # what Prometheus records of every target itself
CARRIED = ("component", "node", "entity")


def alerts() -> list[dict[str, Any]]:
    groups = YAML(typ="safe").load(RULES.read_text())["groups"]
    return [r for g in groups if g["name"] == "chaoskit-diagnosis" for r in g["rules"]]


@pytest.mark.parametrize("rule", alerts(), ids=lambda r: str(r.get("alert")))
def test_every_rule_reads_only_the_diagnosis_series(rule: dict[str, Any]) -> None:
    assert series_names(rule["expr"]) <= set(SERIES) | PROMETHEUS_OWN


@pytest.mark.parametrize("rule", alerts(), ids=lambda r: str(r.get("alert")))
def test_every_alert_carries_where_and_what_and_says_it(rule: dict[str, Any]) -> None:
    labels = rule.get("labels") or {}
    assert labels.get("severity") in ("critical", "warning")
    carried = set(labels) | ({*CARRIED} if FINDING in series_names(rule["expr"]) else set())
    assert set(CARRIED) <= carried
    assert {"summary", "description"} <= set(rule.get("annotations") or {})
    if FINDING in series_names(rule["expr"]):
        assert "{{ $labels.finding }}" in rule["annotations"]["summary"]
        assert 'caused_by=""' in rule["expr"]  # the root cause pages, not each consequence of it


def test_the_alerts_are_a_critical_at_once_a_warning_after_2m_and_a_diagnosis_not_looking() -> None:
    by_name = {r["alert"]: r for r in alerts()}
    assert set(by_name) == {"ChaoskitCriticalFinding", "ChaoskitWarningFinding", "ChaoskitDiagnosisNotLooking"}
    assert "for" not in by_name["ChaoskitCriticalFinding"]
    assert by_name["ChaoskitWarningFinding"]["for"] == "2m"
    assert "3 *" in by_name["ChaoskitDiagnosisNotLooking"]["expr"]
