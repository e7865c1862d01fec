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
from chaoskit.registry import CHECKS, FAULTS, MEASUREMENTS, Catalog, Registered, Registry, load_catalog


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


@pytest.mark.parametrize(
    ("model", "field", "names"),
    [("FaultStep", "fault", FAULTS), ("Check", "check", CHECKS), ("MeasurementRef", "type", MEASUREMENTS)],
)
def test_catalog_names_are_enums_so_an_editor_completes_them(
    schema: dict[str, Any], model: str, field: str, names: Registry[Registered]
) -> None:
    load_catalog()
    assert schema["$defs"][model]["properties"][field]["enum"] == names.names()


def test_a_fault_name_typo_is_refused_by_the_schema(schema: dict[str, Any]) -> None:
    doc = _example()
    doc["spec"]["steps"][0]["fault"] = "kubelet.stpo"
    assert any("kubelet.stpo" in e.message for e in Draft202012Validator(schema).iter_errors(doc))


def test_a_catalog_of_its_own_gives_its_own_names() -> None:
    mine = Catalog(Registry("fault"), Registry("check"), Registry("measurement"))
    mine.faults.add("mine.down", type("Down", (), {"__doc__": "Mine.", "Params": Spec}))
    schema = playbook_json_schema(mine)
    assert schema["$defs"]["FaultStep"]["properties"]["fault"]["enum"] == ["mine.down"]
    assert "enum" not in schema["$defs"]["Check"]["properties"]["check"]  # none registered: any name, as before
