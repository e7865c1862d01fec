"""The ChaosExperiment CRD's schema is generated from the playbook models: committed fresh, structural as the API
server requires, and refusing what the catalog does not hold while accepting every shipped playbook."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft4Validator, ValidationError, validators
from ruamel.yaml import YAML

from chaoskit.cli.crd_schema import CHART_FILE, CRD_FILE, REGENERATE, definition, main, rendered, stale
from chaoskit.model.duration import DURATION_PATTERN, DURATION_PATTERN_RE2
from chaoskit.playbook.openapi import INT_OR_STRING, PRESERVE, NotStructural, structural
from chaoskit.registry import CHECKS, FAULTS, MEASUREMENTS, load_catalog
from chaoskit_operator.experiment import crd

ROOT = Path(__file__).resolve().parents[2]
Schema = dict[str, Any]

# what a CRD's JSONSchemaProps holds (k8s.io/apiextensions-apiserver, types_jsonschema.go), those this schema may use
ALLOWED = {
    "description", "type", "format", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength",
    "minLength", "pattern", "maxItems", "minItems", "enum", "required", "items", "properties",
    "additionalProperties", "nullable", PRESERVE, INT_OR_STRING,
}  # fmt: skip
# where a value is truly free-form: each entry's params (their own models check them) and a probe's `equals` (any
# scalar); status is the operator's
FREE_FORM = {
    "spec.steadyState[].params",
    "spec.steps[].params",
    "spec.steps[].concurrent[].params",
    "spec.measurements[].params",
    "spec.probes[].k8s.equals",
    "status",
}


def _root() -> Schema:
    (version,) = definition()["spec"]["versions"]
    root: Schema = version["schema"]["openAPIV3Schema"]
    return root


def _walk(node: Schema, at: str) -> Iterator[tuple[str, Schema]]:
    yield at, node
    for name, prop in node.get("properties", {}).items():
        yield from _walk(prop, f"{at}.{name}" if at else name)
    if isinstance(node.get("items"), dict):
        yield from _walk(node["items"], f"{at}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from _walk(node["additionalProperties"], f"{at}.*")


def test_the_committed_crd_and_the_charts_copy_are_what_the_models_render() -> None:
    assert stale(ROOT) == [], f"regenerate with `{REGENERATE}`"
    assert rendered(ROOT)[CHART_FILE].endswith(rendered(ROOT)[CRD_FILE].split("\n---\n")[0] + "\n")


def test_the_operator_installs_the_generated_crd() -> None:
    assert crd() == definition()


def test_the_check_flag_says_which_file_is_stale(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check"]) == 0
    assert main(["--bogus"]) == 2
    assert "usage:" in capsys.readouterr().err


def test_the_schema_is_structural() -> None:
    """Every node typed (or int-or-string, or free-form), no $ref or unions, no defaults for the API server to write
    into stored specs, only keys a CRD's schema holds, required fields among the properties."""
    for at, node in _walk(_root(), ""):
        assert set(node) <= ALLOWED, (at, set(node) - ALLOWED)
        assert node.get("type") in {"object", "array", "string", "integer", "number", "boolean"} or (
            node.get(INT_OR_STRING) or node.get(PRESERVE)
        ), at
        if node.get(PRESERVE) and "type" in node:
            assert node["type"] == "object", at
        assert not ("properties" in node and "additionalProperties" in node), at  # exclusive in a CRD
        assert set(node.get("required", [])) <= set(node.get("properties", {})), at
        if node.get("type") == "array":
            assert isinstance(node.get("items"), dict), at


def test_free_form_only_where_it_must_be() -> None:
    assert {at for at, node in _walk(_root(), "") if node.get(PRESERVE)} == FREE_FORM


def test_every_field_is_described_for_kubectl_explain() -> None:
    undocumented = [
        at for at, node in _walk(_root(), "") if at and not at.endswith((".*", "[]")) and not node.get("description")
    ]
    assert undocumented == []


def test_patterns_are_re2_no_lookaround_nor_backreferences() -> None:
    for at, node in _walk(_root(), ""):
        if "pattern" in node:
            assert not re.search(r"\(\?[=!<]|\\[1-9]", node["pattern"]), at
            re.compile(node["pattern"])


@pytest.mark.parametrize(
    "text",
    ["", "5", "5.5", ".5", "5s", "5ms", "5m", "1h", "1h30m5s250ms", "1h5ms", "5m5ms", "1.5h", "s", "ms", "5x", "5s5m",
     "5ms5s", "-5s", "5 s", "5hm", "5mms", "1h1h", "1m30s", "2h"],
)  # fmt: skip
def test_the_re2_duration_pattern_takes_what_the_loader_takes(text: str) -> None:
    assert bool(re.fullmatch(DURATION_PATTERN_RE2, text)) == bool(re.fullmatch(DURATION_PATTERN, text))


def test_catalog_names_are_enums() -> None:
    load_catalog()
    spec = _root()["properties"]["spec"]["properties"]
    step = spec["steps"]["items"]["properties"]
    assert step["fault"]["enum"] == FAULTS.names()
    assert step["concurrent"]["items"]["properties"]["fault"]["enum"] == FAULTS.names()
    assert spec["steadyState"]["items"]["properties"]["check"]["enum"] == CHECKS.names()
    assert spec["measurements"]["items"]["properties"]["type"]["enum"] == MEASUREMENTS.names()


def _apiserver_like() -> type[Draft4Validator]:
    """OpenAPI v3.0 as the API server reads it: nullable lets null through, int-or-string takes an integer or a
    string and nothing else (a float duration included)."""

    def typed(validator: Any, kind: Any, value: Any, node: Schema) -> Iterator[Any]:
        if value is None and node.get("nullable"):
            return
        yield from Draft4Validator.VALIDATORS["type"](validator, kind, value, node)

    def int_or_string(validator: Any, flag: Any, value: Any, node: Schema) -> Iterator[Any]:
        if flag and not (isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))):
            yield ValidationError(f"{value!r} is neither an integer nor a string")

    extended: type[Draft4Validator] = validators.extend(Draft4Validator, {"type": typed, INT_OR_STRING: int_or_string})
    return extended


def _spec_errors(spec: Any) -> list[str]:
    validator = _apiserver_like()(_root()["properties"]["spec"])
    return [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(spec)]


def _shipped() -> list[Path]:
    return sorted([*ROOT.glob("playbooks/*.yaml"), *ROOT.glob("examples/**/playbooks/*.yaml")])


@pytest.mark.parametrize("path", _shipped(), ids=lambda p: p.name)
def test_every_shipped_playbook_is_a_valid_experiment_spec(path: Path) -> None:
    doc = YAML(typ="safe").load(path.read_text())
    assert _spec_errors(doc["spec"]) == []


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ({"steps": [{"fault": "kubelet.stpo", "duration": "10s"}]}, "steps.0.fault: 'kubelet.stpo' is not one of"),
        ({"steps": [{"concurrent": [{"fault": "kubelet.stpo", "duration": "1s"}]}]}, "concurrent.0.fault"),
        ({"steps": [{"fault": "kubelet.stop", "duration": "soon"}]}, "steps.0.duration: 'soon' does not match"),
        ({"steps": [{"fault": "kubelet.stop", "duration": 1.5}]}, "neither an integer nor a string"),
        ({"steps": []}, "steps: [] should be non-empty"),
        ({"steadyState": [{"check": "nodes-redy"}], "steps": [{"fault": "kubelet.stop", "duration": 1}]}, "check"),
        ({"measurements": [{"name": "m", "type": "hpa"}], "steps": [{"fault": "kubelet.stop", "duration": 1}]}, "type"),
    ],
)
def test_what_the_api_server_refuses(spec: Schema, words: str) -> None:
    load_catalog()
    assert any(words in e for e in _spec_errors(spec)), _spec_errors(spec)


def test_a_null_optional_field_and_free_form_params_pass() -> None:
    spec = {"subject": None, "steps": [{"fault": "kubelet.stop", "target": None, "duration": 10, "params": {"x": 1}}]}
    assert _spec_errors(spec) == []


def test_a_union_with_no_structural_form_is_refused_by_name() -> None:
    with pytest.raises(NotStructural, match=r"spec\.x: a union"):
        structural({"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]}, {}, "spec.x")


def test_the_crd_file_keeps_kopfs_peering_after_it() -> None:
    docs = [d for d in YAML(typ="safe").load_all((ROOT / CRD_FILE).read_text()) if d]
    assert [d["metadata"]["name"] for d in docs] == [
        "chaosexperiments.chaoskit.dev",
        "clusterkopfpeerings.kopf.dev",
        "kopfpeerings.kopf.dev",
    ]
