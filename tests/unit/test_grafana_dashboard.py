"""deploy/grafana/chaoskit.json: every panel and annotation queries only series chaoskit exposes (diagnose --serve's,
the run exporter's, the recording rules'), and the panels the dashboard promises are there."""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML
from series_names import series_names

from chaoskit.exporters.diagnosis import SERIES
from chaoskit.exporters.prometheus import Exporter
from chaoskit.model.promql import promql_problem
from tests.dashboard import dashboard, queries

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "deploy" / "prometheus" / "rules.yml"
SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "counter": ("_total",)}  # what the exposition adds


def exposed() -> set[str]:
    """Every series name chaoskit serves or records."""
    names = set(SERIES)
    for family in Exporter().registry.collect():
        names |= {family.name + s for s in SUFFIXES.get(family.type, ("",))}
    groups = YAML(typ="safe").load(RULES.read_text())["groups"]
    return names | {r["record"] for g in groups for r in g["rules"] if "record" in r}


def test_every_query_names_only_what_chaoskit_exposes() -> None:
    known = exposed()
    unknown = {where: sorted(series_names(expr) - known) for where, expr in queries(dashboard())}
    assert {where: names for where, names in unknown.items() if names} == {}


def test_every_query_is_promql() -> None:
    assert {where: promql_problem(expr) for where, expr in queries(dashboard()) if promql_problem(expr)} == {}


def test_every_panel_queries_something_through_the_chosen_datasource() -> None:
    for panel in dashboard()["panels"]:
        assert panel["targets"], panel["title"]
        assert all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"]), panel["title"]


def test_the_dashboard_shows_the_diagnosis_beside_the_runs() -> None:
    board = dashboard()
    read = {name for _, expr in queries(board) for name in series_names(expr)}
    assert {"chaoskit_component_status", "chaoskit_finding", "chaoskit_resilience_score"} <= read
    assert {"chaoskit:hpa_stage_duration_seconds:p50", "chaoskit:rule_sync_delay_seconds:p99_5m"} <= read
    marked = {name for where, expr in queries(board) if where.startswith("annotation") for name in series_names(expr)}
    assert {"chaoskit_active_faults", "chaoskit_last_run_timestamp_seconds"} <= marked
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])
