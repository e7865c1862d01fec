"""docs/faults.md is rendered from the fault registry: it must say what the catalog holds now."""

from __future__ import annotations

from pathlib import Path

from chaoskit.cli.catalog_docs import REGENERATE, no_op_waits, render
from chaoskit.faults.base import Fault
from chaoskit.registry import FAULTS, load_catalog

DOC = Path(__file__).resolve().parents[2] / "docs" / "faults.md"


def test_docs_faults_md_is_what_the_registry_renders() -> None:
    rendered = render()
    written = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    assert written == rendered, f"docs/faults.md is stale: regenerate it with `{REGENERATE}`"


def test_every_fault_is_documented_with_its_diagnosis_and_no_op_wait() -> None:
    load_catalog()
    rendered = render()
    for name in FAULTS.names():
        cls: type[Fault] = FAULTS.get(name)  # type: ignore[assignment]
        section = rendered.split(f"### `{name}`\n", 1)[1].split("\n### ", 1)[0]
        assert f"component `{cls.named.component}`" in section
        assert f"no-op control waits {no_op_waits(cls)}" in section
        for alias in cls.Params.model_json_schema(by_alias=True).get("properties", {}):
            assert f"| `{alias}`" in section, (name, alias)


def test_a_wait_that_moves_with_its_params_is_given_per_value() -> None:
    load_catalog()
    words = no_op_waits(FAULTS.get("controller-manager.controller-stuck"))  # type: ignore[arg-type]
    assert "by `controller`:" in words and "nodelifecycle 70 s" in words
