"""A playbook's target nodes checked against a cluster's node names, each unknown one a Problem at its `node` field."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from chaoskit.errors import Problem
from chaoskit.model.paths import Path, dotted
from chaoskit.model.playbook import ROLES
from chaoskit.model.rules import fault_steps
from chaoskit.playbook.yamldoc import read_document
from chaoskit.registry import close_matches


def named_nodes(source: str | bytes, file: str) -> list[str]:
    """The node names a playbook's steps target by name (roles and "any" left out): nothing to check when none."""
    return [node for _, node in _targets(read_document(source, file).data)]


def unknown_node_problems(source: str | bytes, file: str, nodes: Collection[str], cluster: str) -> list[Problem]:
    """A Problem at each step's `target.node` that names no node of `nodes` (the cluster's, `cluster` naming it)."""
    doc = read_document(source, file)
    problems = []
    for path, node in _targets(doc.data):
        if node in nodes:
            continue
        line, col = doc.locations.find(path)
        close = close_matches(node, nodes)
        hint = f"did you mean {' or '.join(map(repr, close))}?" if close else f"its nodes: {', '.join(sorted(nodes))}"
        problems.append(Problem(file, line, col, dotted(path), f"no node {node!r} in {cluster}; {hint}"))
    return problems


def _targets(data: Mapping[str, Any]) -> list[tuple[Path, str]]:
    spec = data.get("spec")
    if not isinstance(spec, Mapping):
        return []
    found = []
    for path, _, step in fault_steps(spec, ("spec",)):
        target = step.get("target")
        node = target.get("node") if isinstance(target, Mapping) else None
        if isinstance(node, str) and node not in ROLES:
            found.append(((*path, "target", "node"), node))
    return found
