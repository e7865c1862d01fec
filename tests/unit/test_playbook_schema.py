"""`chaoskit playbook schema`: a valid JSON Schema, with descriptions, that accepts the example and refuses typos."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator
from playbook_catalog import EXAMPLE
from ruamel.yaml import YAML

from chaoskit.cli import cli
from chaoskit.model.playbook import Spec
from chaoskit.playbook import playbook_json_schema


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return playbook_json_schema()


def _example() -> Any:
    with open(EXAMPLE) as f:
        return YAML(typ="safe").load(f)


def test_schema_is_a_valid_2020_12_json_schema(schema: dict[str, Any]) -> None:
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_schema_mentions_every_top_level_and_spec_field(schema: dict[str, Any]) -> None:
    assert set(schema["properties"]) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(schema["required"]) == {"apiVersion", "kind", "metadata", "spec"}
    spec = schema["$defs"]["Spec"]["properties"]
    assert set(spec) == {f.alias for f in Spec.model_fields.values()}
    assert set(spec) >= {"cluster", "namespace", "workload", "steadyState", "steps", "measurements", "thresholds"}


def test_every_field_has_a_description(schema: dict[str, Any]) -> None:
    undocumented = [
        f"{name}.{field}"
        for name, definition in schema["$defs"].items()
        for field, prop in definition.get("properties", {}).items()
        if not prop.get("description")
    ]
    assert undocumented == []
    assert all(definition.get("description") for definition in schema["$defs"].values())
    assert all(prop.get("description") for prop in schema["properties"].values())


def test_the_example_playbook_is_valid_against_the_schema(schema: dict[str, Any]) -> None:
    assert list(Draft202012Validator(schema).iter_errors(_example())) == []


@pytest.mark.parametrize(
    ("where", "value"),
    [(("spec", "steps", 0, "duration"), "twenty"), (("spec", "steps", 0, "durration"), "20s"), (("kind",), "Playbok")],
)
def test_the_schema_refuses_what_the_loader_refuses(schema: dict[str, Any], where: tuple[Any, ...], value: str) -> None:
    doc = _example()
    node = doc
    for part in where[:-1]:
        node = node[part]
    node[where[-1]] = value
    assert list(Draft202012Validator(schema).iter_errors(doc)) != []


def test_durations_are_strings_or_numbers_in_the_schema(schema: dict[str, Any]) -> None:
    duration = schema["$defs"]["FaultStep"]["properties"]["duration"]
    assert [option["type"] for option in duration["anyOf"]] == ["number", "string"]
    assert "default" not in schema["$defs"]["FaultStep"]["properties"]["deadline"]  # derived from duration


def test_cli_prints_the_schema_as_json() -> None:
    result = CliRunner().invoke(cli, ["playbook", "schema"])
    assert result.exit_code == 0
    assert json.loads(result.output) == playbook_json_schema()
    assert json.loads(result.output)["title"] == "chaoskit Playbook (chaoskit.dev/v1alpha1)"
