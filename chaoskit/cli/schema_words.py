"""A parameters JSON Schema in words a reader takes in at a glance: one row a parameter, its type (an enum's values,
a number's bounds), its default and what it sets."""

from __future__ import annotations

import json
from typing import Any

Schema = dict[str, Any]


def _resolve(node: Schema, defs: Schema) -> Schema:
    ref = node.get("$ref", "")
    if ref.startswith("#/$defs/"):
        return {**defs.get(ref.split("/")[-1], {}), **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def type_words(node: Schema, defs: Schema) -> str:
    """`integer 1-50`, `one of: a, b`, `string | null`, `list of string`."""
    node = _resolve(node, defs)
    if "enum" in node:
        return "one of: " + ", ".join(json.dumps(v) if not isinstance(v, str) else v for v in node["enum"])
    if "const" in node:
        return f"exactly {node['const']}"
    for key in ("anyOf", "oneOf"):
        if key in node:
            parts = [type_words(n, defs) for n in node[key]]
            return " | ".join(dict.fromkeys(p for p in parts if p != "null")) + (
                " (or null)" if "null" in parts else ""
            )
    kind = node.get("type", "any")
    if isinstance(kind, list):
        return " | ".join(kind)
    if kind == "array":
        return f"list of {type_words(node.get('items', {}), defs)}"
    if kind == "object":
        extra = node.get("additionalProperties")
        return f"map of {type_words(extra, defs)}" if isinstance(extra, dict) else "object"
    low = node.get("minimum", node.get("exclusiveMinimum"))
    high = node.get("maximum", node.get("exclusiveMaximum"))
    if kind in ("integer", "number") and (low is not None or high is not None):
        left = "" if low is None else f"{'>' if 'exclusiveMinimum' in node else ''}{low:g}"
        right = "" if high is None else f"{'<' if 'exclusiveMaximum' in node else ''}{high:g}"
        return f"{kind} {left}..{right}"
    return str(kind)


def _default(prop: Schema) -> str:
    if "default" not in prop:
        return "(required)"
    value = prop["default"]
    return "" if value is None else value if isinstance(value, str) else json.dumps(value)


def parameter_rows(schema: Schema) -> list[dict[str, str]]:
    """One row per property of `schema`, in its order: name, type, default, description."""
    defs = schema.get("$defs", {})
    required = set(schema.get("required", []))
    rows = []
    for name, prop in schema.get("properties", {}).items():
        rows.append(
            {
                "name": name,
                "type": type_words(prop, defs),
                "default": "(required)" if name in required else _default(prop),
                "description": " ".join(str(prop.get("description", "")).split()),
            }
        )
    return rows
