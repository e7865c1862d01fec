"""Reading a playbook file into plain data plus the line and column of every node (ruamel.yaml round-trip mode).

Every way the bytes can fail to be one YAML mapping (not UTF-8, syntax, duplicate keys, several documents,
no document, a non-mapping, non-string keys, self-referencing aliases) becomes a located Problem.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedBase, TaggedScalar
from ruamel.yaml.composer import ComposerError
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.reader import ReaderError

from chaoskit.errors import PlaybookError, Problem
from chaoskit.model.kinds import yaml_kind
from chaoskit.model.paths import Path, dotted
from chaoskit.playbook.locations import START, Locations, Position

MAX_NODES = 100_000  # aliases can expand a small file into a huge tree ("billion laughs")
MAX_DEPTH = 100  # no playbook nests this deep; bounds recursion on hostile input


@dataclass(frozen=True)
class Document:
    data: dict[str, Any]
    locations: Locations
    file: str


def read_document(source: str | bytes, file: str) -> Document:
    """The one mapping in `source`, as plain dicts, lists and scalars; raises PlaybookError when there is none."""
    text = _decode(source, file)
    if not text.strip():
        raise PlaybookError([Problem(file, 1, 1, "", "the file is empty; expected a Playbook mapping")])
    root = _parse(text, file)
    if root is None:
        raise PlaybookError([Problem(file, 1, 1, "", "the document is empty; expected a Playbook mapping")])
    if not isinstance(root, Mapping):
        line, col = _own_position(root) or START
        raise PlaybookError(
            [Problem(file, line, col, "", f"expected a mapping (apiVersion, kind, metadata, spec), got {_kind(root)}")]
        )
    converter = _Converter(file)
    data = converter.convert(root, (), _own_position(root) or START)
    if converter.problems:
        raise PlaybookError(converter.problems)
    assert isinstance(data, dict)  # a Mapping root converts to a dict
    return Document(data, converter.locations, file)


def _decode(source: str | bytes, file: str) -> str:
    if isinstance(source, str):
        return source
    try:
        return source.decode("utf-8-sig")  # tolerate the BOM some editors write
    except UnicodeDecodeError as exc:
        before = source[: exc.start]
        line = before.count(b"\n") + 1
        col = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", errors="replace")) + 1
        message = f"not UTF-8: byte 0x{source[exc.start]:02x} is not valid here"
        raise PlaybookError([Problem(file, line, col, "", message)]) from None


def _parse(text: str, file: str) -> Any:
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. reused anchors: legal YAML, nothing for a user to fix
            return yaml.load(text)
    except MarkedYAMLError as exc:
        raise PlaybookError([_marked_problem(exc, file)]) from None
    except ReaderError as exc:
        line, col = _offset_position(text, exc.position)
        char = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
        message = f"invalid YAML: character {char} is not allowed ({exc.reason})"
        raise PlaybookError([Problem(file, line, col, "", message)]) from None
    except YAMLError as exc:
        raise PlaybookError([Problem(file, 1, 1, "", f"invalid YAML: {_one_line(str(exc))}")]) from None
    except RecursionError:
        raise PlaybookError([Problem(file, 1, 1, "", "invalid YAML: nested too deeply")]) from None
    except Exception as exc:  # ruamel raises bare ValueError and the like on some input, e.g. `!!float x`
        message = f"invalid YAML: {_one_line(str(exc)) or type(exc).__name__}"
        raise PlaybookError([Problem(file, 1, 1, "", message)]) from None


def _marked_problem(exc: MarkedYAMLError, file: str) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else START
    problem = _one_line(exc.problem or "")
    context = _one_line(exc.context or "")
    if isinstance(exc, DuplicateKeyError):
        message = problem.removeprefix("found ")
    elif isinstance(exc, ComposerError) and "single document" in context:
        message = "a playbook file holds one YAML document; another one starts here"
    else:
        message = "invalid YAML: " + ": ".join(part for part in (context, problem) if part)
    return Problem(file, line, col, "", message)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _offset_position(text: str, offset: int) -> Position:
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _own_position(node: Any) -> Position | None:
    if isinstance(node, CommentedBase):
        try:
            return node.lc.line + 1, node.lc.col + 1
        except (AttributeError, TypeError):
            return None
    return None


def _kind(value: Any) -> str:
    return yaml_kind(_scalar(value))


def _scalar(value: Any) -> Any:
    """ruamel's scalar subclasses as the plain Python values pydantic expects."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return bool(value) if type(value).__name__ == "ScalarBoolean" else int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value  # dates, bytes, sets: left for validation to refuse with their own names


def _lc_position(node: Any, which: str, key: Any) -> Position | None:
    try:
        line, col = getattr(node.lc, which)(key)
    except (AttributeError, KeyError, TypeError, IndexError):
        return None  # merged (`<<`) keys have no position of their own
    return line + 1, col + 1


class _Converter:
    def __init__(self, file: str) -> None:
        self.file = file
        self.locations = Locations()
        self.problems: list[Problem] = []
        self._nodes = 0
        self._open: set[int] = set()  # ids of the mappings and lists being converted, to catch alias cycles

    def _problem(self, position: Position, path: Path, message: str) -> None:
        self.problems.append(Problem(self.file, position[0], position[1], dotted(path), message))

    def convert(self, node: Any, path: Path, position: Position) -> Any:
        self.locations.add_value(path, position)
        self._nodes += 1
        if self._nodes == MAX_NODES + 1:
            self._problem(position, path, f"the document expands to more than {MAX_NODES} nodes (through aliases?)")
        if self._nodes > MAX_NODES:
            return None
        if isinstance(node, TaggedScalar):
            self._problem(position, path, f"YAML tags are not supported here ({_tag_text(node)})")
            return str(node.value)
        if isinstance(node, bytes):  # pydantic would quietly take !!binary bytes for a string
            self._problem(position, path, "binary data (!!binary) is not supported here")
            return None
        if not isinstance(node, Mapping | list):
            return _scalar(node)
        if id(node) in self._open:
            # at the key: an alias's value position is that of its anchor
            self._problem(
                self.locations.find(path, "key"), path, "an alias here refers to a mapping or list that contains it"
            )
            return None
        if len(path) >= MAX_DEPTH:
            self._problem(position, path[:3], f"nested deeper than {MAX_DEPTH} levels")  # the full path is no help
            return None
        self._open.add(id(node))
        try:
            if isinstance(node, Mapping):
                return self._mapping(node, path, position)
            return self._list(node, path, position)
        finally:
            self._open.discard(id(node))

    def _mapping(self, node: Mapping[Any, Any], path: Path, position: Position) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in node.items():
            key_position = _lc_position(node, "key", key) or position
            if not isinstance(key, str):
                self._problem(key_position, path, f"keys must be strings, got {_kind(key)}: {_short(key)}")
                continue
            child = (*path, key)
            self.locations.add_key(child, key_position)
            value_position = _lc_position(node, "value", key) or _own_position(value) or key_position
            result[str(key)] = self.convert(value, child, value_position)
        return result

    def _list(self, node: list[Any], path: Path, position: Position) -> list[Any]:
        return [
            self.convert(item, (*path, i), _lc_position(node, "item", i) or _own_position(item) or position)
            for i, item in enumerate(node)
        ]


def _tag_text(node: TaggedScalar) -> str:
    tag = node.tag
    return str(getattr(tag, "value", tag))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
