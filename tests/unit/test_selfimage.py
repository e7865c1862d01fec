"""chaoskit's own image: its dependency pins come from what is installed, markers for other Pythons and extras
left out."""

from __future__ import annotations

import importlib.metadata as md

from chaoskit.cluster.selfimage import _name, _python_marker_holds, pinned_requirements


def test_every_declared_dependency_is_pinned_to_its_installed_version() -> None:
    pins = dict(p.split("==") for p in pinned_requirements())
    for name in ("kubernetes", "kopf", "pydantic", "click", "cryptography", "pydantic-core"):
        assert pins[name] == md.version(name), name
    assert "pytest" not in pins and "mypy" not in pins  # the test extra is not shipped


def test_requirement_lines_are_read_with_their_markers() -> None:
    assert _name("kopf>=1.38") == ("kopf", "")
    assert _name('typing-extensions>=4.6; python_version < "3.13"') == (
        "typing-extensions",
        '; python_version < "3.13"',
    )
    assert _name("pytest>=8; extra == 'test'")[1] == "; extra == 'test'"
    assert _python_marker_holds('; python_version < "3.13"') and not _python_marker_holds('; python_version < "3.9"')
