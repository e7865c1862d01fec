"""Reports derived from one Diagnosis (and, optionally, the RunRecord it belongs to): a terminal table, JSON,
Markdown, one self-contained HTML file with an SVG timeline of the HPA critical path, and JUnit XML for CI.

Every renderer is pure: data in, text out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from chaoskit.diagnosers.kit.base import Diagnosis
from chaoskit.reports.htmlpage import render_html
from chaoskit.reports.jsondoc import render_json
from chaoskit.reports.junit import render_junit
from chaoskit.reports.markdown import render_markdown
from chaoskit.reports.table import render_table

Record = Mapping[str, Any]  # RunRecord.to_dict()
Renderer = Callable[[Diagnosis, Record | None], str]

RENDERERS: dict[str, Renderer] = {
    "table": render_table,
    "json": render_json,
    "markdown": render_markdown,
    "html": render_html,
    "junit": render_junit,
}
FORMATS = tuple(RENDERERS)


def render(diagnosis: Diagnosis, fmt: str, record: Record | None = None) -> str:
    return RENDERERS[fmt](diagnosis, record)


__all__ = ["FORMATS", "RENDERERS", "Record", "render"]
