"""docs/faults.md, rendered from the fault registry: per component, each fault's docs, its parameters as playbooks
spell them, its target and scope, what names it in a diagnosis and how long its no-op control waits.

    python -m chaoskit.cli.catalog_docs > docs/faults.md

`tests/unit/test_catalog_docs.py` fails while docs/faults.md differs from what this renders.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from chaoskit.cli.schema_words import parameter_rows
from chaoskit.components.table import ORDER
from chaoskit.faults.base import Fault
from chaoskit.registry import FAULTS, load_catalog

REGENERATE = "python -m chaoskit.cli.catalog_docs > docs/faults.md"

HEADER = f"""\
<!-- Generated from the fault registry by `{REGENERATE}`; edit the faults' docstrings and
     Params, not this file. tests/unit/test_catalog_docs.py fails while it is stale. -->

# The fault catalog

What each fault breaks, its parameters, and what proves it: generated from the registry.

Every fault chaoskit can inject, by component, as `chaoskit faults list` and `chaoskit faults describe NAME` show
them: what it does, its parameters (as a playbook spells them; `--param` takes the snake_case name), the node it
targets by default, how far its damage reaches (`scope`: what may run beside it in a suite, see
[playbooks.md](playbooks.md#a-suite-several-playbooks-as-one-gate)), what `chaoskit diagnose` must say while it holds
(`named`: the component's report, and a regular expression searched in the finding's title and probable cause) and
how long its no-op control waits for its effect check to stay no (see
[playbooks.md](playbooks.md#the-fact-check-each-verdict-observed-where-it-must-say-no)).
"""


def _prose(text: str) -> str:
    """Text as Markdown prose: `<` and `>` outside code spans escaped, so `<name>` is not read as an HTML tag."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # the even parts lie outside code spans
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _cell(text: str) -> str:
    """Text as one Markdown table cell: one line, pipes escaped."""
    return _prose(" ".join(text.split())).replace("|", "\\|")


def _code(text: str) -> str:
    """Text as an inline code span, whatever backticks it holds."""
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _enum_values(schema: dict[str, Any], prop: dict[str, Any]) -> list[Any]:
    ref = prop.get("$ref", "")
    node = schema.get("$defs", {}).get(ref.split("/")[-1], {}) if ref.startswith("#/$defs/") else prop
    values: list[Any] = node.get("enum", [])
    return values


def no_op_waits(cls: type[Fault]) -> str:
    """How long the fault's no-op control waits: its default params' wait, and per value of an enum parameter where
    the fault moves that wait with it."""
    fault = cls()
    params = cls.Params()
    base = fault.no_op_wait(params)
    words = _seconds(base)
    if cls.no_op_wait is not Fault.no_op_wait:  # the fault moves the wait with its params
        schema = cls.Params.model_json_schema(by_alias=True)
        by_field = {(f.alias or n): n for n, f in cls.Params.model_fields.items()}
        for alias, prop in schema.get("properties", {}).items():
            values = _enum_values(schema, prop)
            waits = {v: fault.no_op_wait(cls.Params.model_validate({by_field[alias]: v})) for v in values}
            if len(set(waits.values())) > 1:
                words += f" with the default params; by `{alias}`: " + ", ".join(
                    f"{v} {_seconds(w)}" for v, w in waits.items()
                )
    if cls.no_op.params:
        words += " (the control is planned with " + ", ".join(f"`{k}: {v}`" for k, v in cls.no_op.params) + ")"
    return words


def _parameters(params: type[BaseModel]) -> list[str]:
    schema = params.model_json_schema(by_alias=True)
    rows = parameter_rows(schema)
    if not rows:
        return ["Parameters: none."]
    python_name = {(f.alias or n): n for n, f in params.model_fields.items()}
    lines = ["| parameter | type | default | what it sets |", "|---|---|---|---|"]
    for row in rows:
        name = f"`{row['name']}`"
        if python_name.get(row["name"], row["name"]) != row["name"]:
            name += f" (`--param {python_name[row['name']]}`)"
        default = row["default"]
        shown = default if default in ("", "(required)") else _code(default)
        lines.append(f"| {name} | {_cell(row['type'])} | {_cell(shown)} | {_cell(row['description'])} |")
    return lines


def render_fault(name: str, cls: type[Fault]) -> list[str]:
    doc = inspect.getdoc(cls) or ""
    summary, _, rest = doc.partition("\n\n")
    lines = [f"### `{name}`", "", _prose(" ".join(summary.split())), ""]
    if rest.strip():
        lines += [_prose(rest.strip()), ""]
    lines += [
        f"- target: the {cls.target_role} node by default; scope: {cls.scope}",
        f"- named by the diagnosis: component `{cls.named.component}`, cause {_code(cls.named.cause)}",
        f"- no-op control waits {no_op_waits(cls)}",
        "",
    ]
    lines += _parameters(cls.Params)
    return [*lines, ""]


def _by_component(names: Iterable[str]) -> dict[str, list[tuple[str, type[Fault]]]]:
    groups: dict[str, list[tuple[str, type[Fault]]]] = {}
    for name in names:
        cls: type[Fault] = FAULTS.get(name)  # type: ignore[assignment]
        groups.setdefault(cls.component, []).append((name, cls))
    rank = {c: i for i, c in enumerate(ORDER)}
    return dict(sorted(groups.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))


def render() -> str:
    """docs/faults.md as it should read now."""
    load_catalog()
    groups = _by_component(FAULTS.names())
    lines = [HEADER]
    lines += [
        "| component | faults |",
        "|---|---|",
        *(f"| {c} | {', '.join(f'`{n}`' for n, _ in faults)} |" for c, faults in groups.items()),
        "",
    ]
    for component, faults in groups.items():
        lines += [f"## {component}", ""]
        for name, cls in faults:
            lines += render_fault(name, cls)
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
