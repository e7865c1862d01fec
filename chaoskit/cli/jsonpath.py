"""kubectl's `-o jsonpath=TEMPLATE`, the part of it people pipe: literal text with `{expr}` blocks, where an expr is a
path from the current object (`.items[*].name`, `.a['b.c'][0]`, `@`) or a quoted literal (`{"\\n"}`), and
`{range expr}...{end}` repeats its body for each value. Several values of one block print space-separated, a dict
or a list as JSON; `\\n` and `\\t` in the text are a newline and a tab. A template that does not parse is a
UsageError naming where.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from chaoskit.errors import UsageError

STEP = re.compile(r"\.([A-Za-z0-9_\-]+)|\[\*\]|\[(-?\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")
ANY = object()  # the [*] step


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Path:
    steps: tuple[object, ...]  # a key, an index, or ANY


@dataclass(frozen=True)
class Range:
    path: Path
    body: tuple[Text | Path | Range, ...]


Node = Text | Path | Range


def _path(expr: str, template: str) -> Path:
    expr = expr.strip()
    rest = expr[1:] if expr.startswith("@") else expr
    steps: list[object] = []
    at = 0
    while at < len(rest):
        m = STEP.match(rest, at)
        if m is None:
            raise UsageError(f"jsonpath {template!r}: cannot read {rest[at:]!r} in {{{expr}}}")
        name, index, quoted, dquoted = m.groups()
        if name is not None:
            steps.append(name)
        elif index is not None:
            steps.append(int(index))
        elif quoted is not None or dquoted is not None:
            steps.append(quoted if quoted is not None else dquoted)
        else:
            steps.append(ANY)
        at = m.end()
    if not expr.startswith(("@", ".", "[")) and expr:
        raise UsageError(f"jsonpath {template!r}: {{{expr}}} must start with '.', '[' or '@'")
    return Path(tuple(steps))


def parse(template: str) -> tuple[Node, ...]:
    """The template's blocks; UsageError for an unclosed brace or a range without its end."""
    stack: list[list[Node]] = [[]]
    ranges: list[Path] = []
    at = 0
    while at < len(template):
        open_at = template.find("{", at)
        if open_at < 0:
            stack[-1].append(Text(_unescape(template[at:])))
            break
        if open_at > at:
            stack[-1].append(Text(_unescape(template[at:open_at])))
        close = template.find("}", open_at)
        if close < 0:
            raise UsageError(f"jsonpath {template!r}: '{{' at {open_at} is never closed")
        expr = template[open_at + 1 : close].strip()
        if expr.startswith("range "):
            ranges.append(_path(expr[len("range ") :], template))
            stack.append([])
        elif len(expr) >= 2 and expr[0] == expr[-1] and expr[0] in "\"'":
            stack[-1].append(Text(_unescape(expr[1:-1])))  # {"\n"}: a literal, as kubectl takes it
        elif expr == "end":
            if not ranges:
                raise UsageError(f"jsonpath {template!r}: {{end}} at {open_at} closes no {{range}}")
            body = stack.pop()
            stack[-1].append(Range(ranges.pop(), tuple(body)))
        else:
            stack[-1].append(_path(expr, template))
        at = close + 1
    if ranges:
        raise UsageError(f"jsonpath {template!r}: a {{range}} has no {{end}}")
    return tuple(stack[0])


def _unescape(text: str) -> str:
    return text.replace("\\n", "\n").replace("\\t", "\t")


def select(data: Any, path: Path) -> list[Any]:
    """Every value `path` reaches from `data` (a missing key or index reaches nothing)."""
    values = [data]
    for step in path.steps:
        out: list[Any] = []
        for v in values:
            if step is ANY:
                out += list(v.values()) if isinstance(v, dict) else list(v) if isinstance(v, list) else []
            elif isinstance(step, int):
                if isinstance(v, list) and -len(v) <= step < len(v):
                    out.append(v[step])
            elif isinstance(v, dict) and step in v:
                out.append(v[step])
        values = out
    return values


def _show(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, default=str)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render(template: str | tuple[Node, ...], data: Any) -> str:
    nodes = parse(template) if isinstance(template, str) else template
    out: list[str] = []
    for node in nodes:
        if isinstance(node, Text):
            out.append(node.text)
        elif isinstance(node, Path):
            out.append(" ".join(_show(v) for v in select(data, node)))
        else:
            out += [render(node.body, item) for item in select(data, node.path)]
    return "".join(out)
