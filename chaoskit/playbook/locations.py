"""Where each part of a YAML document sits, so a problem at spec.steps[0].duration points at its line and column."""

from __future__ import annotations

from typing import Literal

from chaoskit.model.paths import Path

Position = tuple[int, int]  # 1-based line, column
Anchor = Literal["value", "key", "container"]

START: Position = (1, 1)


class Locations:
    """Positions of values (every node, mappings and lists included) and of mapping keys, by document path."""

    def __init__(self) -> None:
        self._values: dict[Path, Position] = {}
        self._keys: dict[Path, Position] = {}

    def add_value(self, path: Path, position: Position) -> None:
        self._values.setdefault(path, position)

    def add_key(self, path: Path, position: Position) -> None:
        self._keys.setdefault(path, position)

    def find(self, path: Path, anchor: Anchor = "value") -> Position:
        """The position to report for `path`; a path the document lacks falls back to its nearest present parent."""
        if anchor == "key" and path in self._keys:
            return self._keys[path]
        if anchor == "container":
            path = path[:-1]  # a missing field is reported at the mapping that should hold it
        for end in range(len(path), -1, -1):
            if path[:end] in self._values:
                return self._values[path[:end]]
        return START
