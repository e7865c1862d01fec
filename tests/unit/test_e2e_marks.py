"""The e2e tests' marks say what they touch: a module's `pytestmark` assigned twice would drop the first silently."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

E2E = sorted(Path(__file__).parent.parent.joinpath("e2e").glob("test_*.py"))


@pytest.mark.parametrize("path", E2E, ids=[p.name for p in E2E])
def test_a_module_assigns_pytestmark_once(path: Path) -> None:
    tree = ast.parse(path.read_text())
    assigned = [
        n.lineno
        for n in tree.body
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)
    ]
    assert len(assigned) <= 1, f"{path.name}: pytestmark assigned on lines {assigned}; the last one wins"
