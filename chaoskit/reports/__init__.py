"""Reports derived from one Diagnosis (and, optionally, the RunRecord it belongs to): a terminal table, JSON,
Markdown, one self-contained HTML file with an SVG timeline of the HPA critical path, and JUnit XML for CI.

Every renderer is pure: data in, text out.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chaoskit.diagnosers.kit.base import Diagnosis
    from chaoskit.model.record import RunRecord

Renderer = Callable[["Diagnosis", "RunRecord | None"], str]

# format -> its renderer's module and function, imported on use: the HTML page's jinja2 and JUnit's junitparser cost a
# `chaoskit diagnose` a tenth of a second it would otherwise spend before its first look
RENDERERS: dict[str, tuple[str, str]] = {
    "table": ("chaoskit.reports.table", "render_table"),
    "json": ("chaoskit.reports.jsondoc", "render_json"),
    "markdown": ("chaoskit.reports.markdown", "render_markdown"),
    "html": ("chaoskit.reports.htmlpage", "render_html"),
    "junit": ("chaoskit.reports.junit", "render_junit"),
}
FORMATS = tuple(RENDERERS)


def renderer(fmt: str) -> Renderer:
    module, name = RENDERERS[fmt]
    return getattr(import_module(module), name)  # type: ignore[no-any-return]


def render(diagnosis: Diagnosis, fmt: str, record: RunRecord | None = None) -> str:
    return renderer(fmt)(diagnosis, record)


__all__ = ["FORMATS", "RENDERERS", "render"]
