"""chaoskit's own image: its dependency pins come from what is installed, markers for other Pythons and extras
left out."""

from __future__ import annotations

import importlib.metadata as md
import sys
from pathlib import Path

import pytest

from chaoskit.cluster import selfimage
from chaoskit.cluster.cache import Cache
from chaoskit.cluster.selfimage import SITE, _name, _python_marker_holds, pinned_requirements
from chaoskit.seams.shell import FakeRunner


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


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="compiled only by the image's own Python version")
def test_the_dependencies_are_compiled_for_the_image_without_a_source_timestamp_to_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selfimage, "pinned_requirements", lambda: ["click==8.1.7"])
    runner = FakeRunner()
    selfimage.site_packages(Cache(tmp_path), runner)
    (compile,) = [c for c in runner.calls if "compileall" in c]
    assert "unchecked-hash" in compile  # the image's files have mtime 0
    assert compile[compile.index("-d") + 1] == SITE  # tracebacks name the files where the image has them
