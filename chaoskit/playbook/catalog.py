"""Checking a raw playbook against the catalog: every fault, check and measurement it names must be registered, and
its params must fit that entry's Params model."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from chaoskit.errors import Problem, UnknownName
from chaoskit.model.paths import Path, dotted
from chaoskit.model.rules import fault_steps, mappings
from chaoskit.playbook.locations import Locations
from chaoskit.playbook.problems import located
from chaoskit.registry import Registered, Registry


def catalog_problems(
    doc: Mapping[str, Any],
    *,
    faults: Registry[Registered],
    checks: Registry[Registered],
    measurements: Registry[Registered],
    locations: Locations,
    file: str,
) -> list[Problem]:
    spec = doc.get("spec")
    if not isinstance(spec, Mapping):
        return []
    problems: list[Problem] = []
    for path, entry, registry, key in _references(spec, faults, checks, measurements):
        name = entry.get(key)
        if not isinstance(name, str):
            continue  # validation reports the wrong type
        if name not in registry:
            line, col = locations.find((*path, key))
            message = str(UnknownName(registry.kind, name, registry.suggest(name), registry.names()))
            problems.append(Problem(file, line, col, dotted((*path, key)), message))
            continue
        params = entry.get("params", {})
        if not isinstance(params, dict):
            continue
        model = registry.params_model(name)
        try:
            model.model_validate(params)
        except ValidationError as exc:
            at = (*path, "params")
            problems += located(exc, model=model, data=params, at=at, locations=locations, file=file)
    return problems


def _references(
    spec: Mapping[str, Any],
    faults: Registry[Registered],
    checks: Registry[Registered],
    measurements: Registry[Registered],
) -> Iterator[tuple[Path, Mapping[str, Any], Registry[Registered], str]]:
    """(path of the entry, the entry, the registry its name is in, the key holding the name)."""
    at: Path = ("spec",)
    for i, entry in mappings(spec.get("steadyState")):
        yield (*at, "steadyState", i), entry, checks, "check"
    for path, _, entry in fault_steps(spec, at):
        yield path, entry, faults, "fault"
    for i, entry in mappings(spec.get("measurements")):
        yield (*at, "measurements", i), entry, measurements, "type"
