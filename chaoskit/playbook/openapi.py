"""A playbook's spec as a structural OpenAPI v3 schema, the ChaosExperiment CRD's, made from the editor JSON Schema.

Structural, as the API server requires of a CRD (so it prunes, validates and `kubectl explain` documents): every
node typed, `$ref`s inlined, no `anyOf`/`oneOf` carrying types, no defaults (the API server would write them into
every stored spec; chaoskit fills its own, some derived from other fields). JSON Schema's unions become what the API
server offers instead:

- a field that may be null: its one other type, `nullable: true`;
- a duration (a number of seconds or "20s") and an HTTP status (200 or "2xx"): `x-kubernetes-int-or-string`, so a
  ChaosExperiment writes a fraction of a second with a unit ("1500ms") rather than as a bare 1.5;
- a step (a fault step, or a `concurrent` group): one object holding the fields of both;
- a value of any scalar type (a k8s probe's `equals`): `x-kubernetes-preserve-unknown-fields` with no type.

A fault's, check's or measurement's `params` stay free-form objects: they differ per entry, which one schema cannot
say, and `chaoskit validate` and the operator check them against the entry's own model.
"""

from __future__ import annotations

from typing import Any

from chaoskit.model.duration import DURATION_PATTERN, DURATION_PATTERN_RE2
from chaoskit.playbook.schema import playbook_json_schema
from chaoskit.registry import CATALOG, Catalog

Schema = dict[str, Any]

PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"
# the JSON Schema words OpenAPI v3 in a CRD has no use for, or refuses
_DROPPED = frozenset({"title", "default", "$schema", "$id", "$defs", "discriminator", "examples"})
# Go's RE2 has no lookaround: patterns written for Python's re, in RE2
_RE2 = {DURATION_PATTERN: DURATION_PATTERN_RE2}
DURATION_WORDS = "A duration: 500ms, 20s, 1m30s, 2h, or whole seconds."
_SCALARS = frozenset({"string", "integer", "number", "boolean"})


class NotStructural(ValueError):
    """A JSON Schema construct the converter has no structural form for (a model changed: teach the converter)."""


def spec_schema(catalog: Catalog = CATALOG) -> Schema:
    """The structural schema of a ChaosExperiment's spec: a playbook's spec, catalog names as enums."""
    schema = playbook_json_schema(catalog)
    defs: Schema = schema["$defs"]
    return structural({"$ref": "#/$defs/Spec"}, defs)


def structural(node: Schema, defs: Schema, at: str = "spec") -> Schema:
    """`node` (a pydantic JSON Schema node, its `$ref`s into `defs`) as a structural OpenAPI v3 schema; `at` names
    the node in errors."""
    node = _inlined(node, defs)
    for union in ("anyOf", "oneOf"):
        if union in node:
            return _union(node, node[union], union, defs, at)
    if "allOf" in node or "not" in node:
        raise NotStructural(f"{at}: allOf/not has no structural form")
    out: Schema = {}
    if "description" in node:
        out["description"] = " ".join(str(node["description"]).split())
    if "const" in node:
        out["enum"] = [node["const"]]
    kind = node.get("type")
    if kind is None and "const" in node:
        kind = _type_of(node["const"])
    if kind is None and "enum" in node:
        kind = _type_of(node["enum"][0])
    if not isinstance(kind, str):
        raise NotStructural(f"{at}: no single type ({kind!r})")
    out["type"] = kind
    for key, value in node.items():
        if key in _DROPPED or key in out or key in ("type", "const", "properties", "items", "additionalProperties"):
            continue
        if key == "uniqueItems":
            continue  # refused in a CRD (quadratic); the models say what duplicates mean
        if key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            out[bound], out[key] = value, True  # OpenAPI v3.0 spells an exclusive bound as a flag beside it
            continue
        out[key] = _RE2.get(value, value) if key == "pattern" else value
    if kind == "object":
        _object(node, out, defs, at)
    if kind == "array":
        out["items"] = structural(node.get("items", {}), defs, f"{at}[]")
    return out


def _inlined(node: Schema, defs: Schema) -> Schema:
    """`node` with its `$ref` replaced by the definition; the node's own words (its description) win."""
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return node
    name = ref.removeprefix("#/$defs/")
    if name not in defs:
        raise NotStructural(f"unresolved $ref {ref}")
    return {**_inlined(defs[name], defs), **{k: v for k, v in node.items() if k != "$ref"}}


def _object(node: Schema, out: Schema, defs: Schema, at: str) -> None:
    properties: Schema = node.get("properties", {})
    extra = node.get("additionalProperties")
    if properties:
        # unknown fields are pruned by the API server and refused by kubectl's strict field validation
        out["properties"] = {name: structural(prop, defs, f"{at}.{name}") for name, prop in properties.items()}
    elif isinstance(extra, dict):
        out["additionalProperties"] = structural(extra, defs, f"{at}.*")
    else:
        out[PRESERVE] = True  # free-form (params): checked by the model of the entry it belongs to
    if node.get("required"):
        out["required"] = list(node["required"])


def _union(node: Schema, options: list[Schema], word: str, defs: Schema, at: str) -> Schema:
    own = {k: v for k, v in node.items() if k != word}
    present = [_inlined(o, defs) for o in options if o.get("type") != "null"]
    nullable = len(present) < len(options)
    if len(present) == 1:
        out = structural({**present[0], **own}, defs, at)
    else:
        kinds = {o.get("type") for o in present}
        if kinds <= {"integer", "number", "string"} and "string" in kinds and len(kinds) > 1:
            out = _int_or_string(present, own)
        elif kinds == {"object"}:
            out = _merged(present, own, defs, at)
        elif kinds <= _SCALARS:
            out = _described({PRESERVE: True}, own)  # any scalar: the model checks it
        else:
            raise NotStructural(f"{at}: a union of {sorted(map(str, kinds))} has no structural form")
    if nullable:
        out["nullable"] = True
    return out


def _int_or_string(options: list[Schema], own: Schema) -> Schema:
    out = _described({INT_OR_STRING: True}, own)
    for option in options:
        for key in ("minimum", "maximum"):
            if key in option and option.get("type") != "string":
                out[key] = option[key]  # applies to the integer; a string's bound is its pattern
        if option.get("type") == "string" and "pattern" in option:
            out["pattern"] = _RE2.get(option["pattern"], option["pattern"])  # applies to the string only
            if option["pattern"] == DURATION_PATTERN:
                out["description"] = f"{out.get('description', '')} {DURATION_WORDS}".strip()
    return out


def _merged(options: list[Schema], own: Schema, defs: Schema, at: str) -> Schema:
    """Objects of several shapes as one object holding every shape's fields; none required, as none is in all."""
    properties: Schema = {}
    for option in options:
        for name, prop in option.get("properties", {}).items():
            properties.setdefault(name, prop)
    words = own.get("description") or " Or: ".join(str(o.get("description", "")) for o in options)
    merged = {"type": "object", "description": words, "properties": properties}
    return structural(merged, defs, at)


def _described(out: Schema, own: Schema) -> Schema:
    if "description" in own:
        return {"description": " ".join(str(own["description"]).split()), **out}
    return out


def _type_of(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"
