"""deploy/grafana/chaoskit.json's queries, as the unit tests name-check them and the e2e test runs them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parents[1] / "deploy" / "grafana" / "chaoskit.json"
GRAFANA_VARIABLE = re.compile(r"\$\{?\w+\}?")  # $__rate_interval and the like: ranges, for PromQL a duration


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def queries(board: dict[str, Any], interval: str = "5m") -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and annotation, Grafana's variables made `interval`."""
    for panel in board["panels"]:
        for t in panel["targets"]:
            yield panel["title"], GRAFANA_VARIABLE.sub(interval, t["expr"])
    for a in board["annotations"]["list"]:
        if "expr" in a:
            yield f"annotation {a['name']}", GRAFANA_VARIABLE.sub(interval, a["expr"])
