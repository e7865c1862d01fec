"""pydantic's errors as located Problems, in a playbook author's words."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from chaoskit.errors import Problem
from chaoskit.model.base import PATTERN_WORDS, RULE_ERROR
from chaoskit.model.kinds import yaml_kind
from chaoskit.model.paths import Path, dotted
from chaoskit.model.playbook import UNION_TAGS
from chaoskit.playbook.fields import known_keys
from chaoskit.playbook.locations import Anchor, Locations
from chaoskit.registry import close_matches

_EXPECTED = {
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "dict_type": "a mapping",
    "list_type": "a list",
    "string_type": "a string",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
}


def located(
    error: ValidationError,
    *,
    model: type[BaseModel],
    data: Any,
    at: Path,
    locations: Locations,
    file: str,
    rules: bool = False,
) -> list[Problem]:
    """One Problem per error of validating `data` (found at `at` in the document) with `model`.

    Broken cross-field rules are left out unless `rules`: the loader checks those on the raw document, which
    locates them better and finds them even when other fields fail.
    """
    problems = []
    for detail in error.errors(include_url=False):
        if detail["type"] == RULE_ERROR and not rules:
            continue
        relative = _yaml_path(detail["loc"])
        anchor: Anchor = "value"
        if detail["type"] == "missing":
            anchor = "container"
        elif detail["type"] == "extra_forbidden":
            anchor = "key"
        line, col = locations.find((*at, *relative), anchor)
        message = _message(detail, model, relative, data)
        problems.append(Problem(file, line, col, dotted((*at, *relative)), message))
    return problems


def _yaml_path(loc: tuple[str | int, ...]) -> Path:
    path: list[str | int] = []
    for i, part in enumerate(loc):
        if part in UNION_TAGS and i > 0 and isinstance(loc[i - 1], int):
            continue  # pydantic names the union member it tried; YAML has no such level
        if part == "[key]":
            continue
        path.append(part)
    return tuple(path)


def _message(detail: ErrorDetails, model: type[BaseModel], path: Path, data: Any) -> str:
    kind, value = detail["type"], detail["input"]
    ctx: dict[str, Any] = dict(detail.get("ctx") or {})
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return _unknown_field(model, path, data)
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {yaml_kind(value)}" + _shown(value)
    if kind == "literal_error":
        return f"expected {ctx.get('expected', 'another value')}, got {value!r}"
    if kind == "string_pattern_mismatch":
        words = PATTERN_WORDS.get(str(ctx.get("pattern")), f"must match {ctx.get('pattern')}")
        return f"{value!r} {words}"
    if kind == "too_short" and ctx.get("min_length") == 1:
        return "must not be empty"
    if kind == "greater_than_equal":
        return f"must be at least {ctx.get('ge')}, got {value!r}"
    if kind == "less_than_equal":
        return f"must be at most {ctx.get('le')}, got {value!r}"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters long, got {len(str(value))}"
    return str(detail["msg"])


def _shown(value: Any) -> str:
    if isinstance(value, dict | list) or value is None:
        return ""
    text = repr(value)
    return f" ({text})" if len(text) <= 40 else ""


def _unknown_field(model: type[BaseModel], path: Path, data: Any) -> str:
    known = known_keys(model, path[:-1], data)
    name = str(path[-1]) if path else ""
    if not known:
        return "unknown field"
    matches = close_matches(name, known)
    if matches:
        return "unknown field; did you mean " + " or ".join(repr(m) for m in matches) + "?"
    return "unknown field; expected one of: " + ", ".join(known)
