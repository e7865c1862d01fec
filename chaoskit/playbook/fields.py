"""Which YAML keys a model accepts at a path of a document, so "unknown field" can say what was meant."""

from __future__ import annotations

import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Discriminator, Tag

from chaoskit.model.paths import Path


def known_keys(model: type[BaseModel], path: Path, data: Any) -> list[str] | None:
    """The keys of the model that validates the mapping at `path` in `data`; None when that cannot be told."""
    annotation: Any = model
    node = data
    for part in path:
        annotation = _concrete(annotation, node)
        if isinstance(part, str) and _is_model(annotation):
            annotation = next((f.annotation for k, f in _aliases(annotation).items() if k == part), None)
            if annotation is None:
                return None
        elif isinstance(part, int) and get_origin(annotation) is list:
            annotation = get_args(annotation)[0]
        else:
            return None
        node = _child(node, part)
    annotation = _concrete(annotation, node)
    return sorted(_aliases(annotation)) if _is_model(annotation) else None


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _aliases(model: type[BaseModel]) -> dict[str, Any]:
    return {(info.alias or name): info for name, info in model.model_fields.items()}


def _child(node: Any, part: str | int) -> Any:
    if isinstance(part, str) and isinstance(node, dict):
        return node.get(part)
    if isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
        return node[part]
    return None


def _concrete(annotation: Any, node: Any) -> Any:
    """Unwraps Annotated and Optional, and picks the member of a tagged union that `node` selects."""
    discriminator: Discriminator | None = None
    while True:
        if get_origin(annotation) is Annotated:
            args = get_args(annotation)
            discriminator = next((m for m in args[1:] if isinstance(m, Discriminator)), discriminator)
            annotation = args[0]
        elif get_origin(annotation) in (Union, types.UnionType):
            members = [m for m in get_args(annotation) if m is not type(None)]
            if len(members) == 1:
                annotation = members[0]
            elif discriminator is not None and callable(discriminator.discriminator):
                tag = discriminator.discriminator(node)
                annotation = next((m for m in members if _tag(m) == tag), None)
                discriminator = None
            else:
                return None
        else:
            return annotation


def _tag(annotation: Any) -> str | None:
    if get_origin(annotation) is Annotated:
        return next((m.tag for m in get_args(annotation)[1:] if isinstance(m, Tag)), None)
    return None
