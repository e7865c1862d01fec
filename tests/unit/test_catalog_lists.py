"""`chaoskit checks list` and `chaoskit measurements list`: every registered name, its description and parameters."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from ruamel.yaml import YAML

from chaoskit.cli import cli
from chaoskit.registry import CHECKS, MEASUREMENTS, Registered, Registry, load_catalog


@pytest.mark.parametrize(("group", "registry"), [("checks", CHECKS), ("measurements", MEASUREMENTS)])
def test_json_lists_every_registered_name_with_its_description_and_parameters(
    group: str, registry: Registry[Registered]
) -> None:
    load_catalog()
    result = CliRunner().invoke(cli, [group, "list", "-o", "json"])
    assert result.exit_code == 0, result.output
    items = json.loads(result.output)["items"]
    assert [i["name"] for i in items] == registry.names()
    for item in items:
        assert item["summary"] and "\n" not in item["summary"]
        assert item["parameters"] == sorted(registry.params_model(item["name"]).model_json_schema()["properties"])


def test_a_checks_parameters_are_listed() -> None:
    items = json.loads(CliRunner().invoke(cli, ["checks", "list", "-o", "json"]).output)["items"]
    assert {i["name"]: i["parameters"] for i in items}["cluster-healthy"] == ["exceptNodes"]


def test_yaml_is_the_same_list() -> None:
    as_yaml = YAML(typ="safe").load(CliRunner().invoke(cli, ["measurements", "list", "-o", "yaml"]).output)
    as_json = json.loads(CliRunner().invoke(cli, ["measurements", "list", "-o", "json"]).output)
    assert as_yaml == as_json


@pytest.mark.parametrize(("group", "header"), [("checks", "CHECK"), ("measurements", "MEASUREMENT")])
def test_the_table_in_a_pipe_has_a_row_a_name(group: str, header: str) -> None:
    lines = CliRunner().invoke(cli, [group, "list"]).output.splitlines()
    assert lines[0].split() == [header, "WHAT", "IT", "DOES", "PARAMETERS"]
    assert len(lines) == 1 + len(json.loads(CliRunner().invoke(cli, [group, "list", "-o", "json"]).output)["items"])


def test_an_unknown_format_is_a_usage_error() -> None:
    assert CliRunner().invoke(cli, ["checks", "list", "-o", "csv"]).exit_code == 2
