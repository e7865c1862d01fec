"""`kubectl chaoskit …`: kubectl runs any `kubectl-<name>` on PATH, so the package installs that script too."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

from chaoskit.cli import main

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_kubectl_chaoskit_is_a_script_pointing_at_the_same_main_as_chaoskit() -> None:
    scripts = tomllib.loads(PYPROJECT.read_text())["project"]["scripts"]
    assert scripts["kubectl-chaoskit"] == scripts["chaoskit"]
    module, _, attr = scripts["kubectl-chaoskit"].partition(":")
    assert getattr(importlib.import_module(module), attr) is main
