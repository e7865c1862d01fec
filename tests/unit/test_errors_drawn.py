"""errors.py draws every exception chaoskit defines, under its real parent and with its exit code."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import chaoskit
import chaoskit_operator
from chaoskit import errors
from chaoskit.errors import ChaoskitError

LINE = re.compile(r"^(?P<indent>[ │├└─]*)(?P<name>[A-Za-z_]\w*)(?:\s{2,}(?P<rest>.*))?$")  # a name, then its words


def _defined() -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    for package in (chaoskit, chaoskit_operator):
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
            if info.name.endswith("__main__"):
                continue  # runs the command line
            module = importlib.import_module(info.name)
            found |= {
                obj
                for obj in vars(module).values()
                if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__
            }
    return found


def _drawn() -> dict[str, tuple[str, str]]:
    """Each drawn name with its parent in the drawing ("" at a root) and the rest of its line."""
    drawn: dict[str, tuple[str, str]] = {}
    stack: list[tuple[int, str]] = []
    for line in (errors.__doc__ or "").splitlines():
        m = LINE.match(line)
        if not m:
            continue
        depth = len(m["indent"])
        while stack and stack[-1][0] >= depth:
            stack.pop()
        drawn[m["name"]] = (stack[-1][1] if stack else "", m["rest"] or "")
        stack.append((depth, m["name"]))
    return drawn


def test_every_exception_is_drawn_under_its_parent_with_its_exit_code() -> None:
    drawn = _drawn()
    for cls in _defined():
        assert cls.__name__ in drawn, f"{cls.__module__}.{cls.__name__} is not drawn in chaoskit/errors.py"
        parent, rest = drawn[cls.__name__]
        real = cls.__bases__[0].__name__
        assert parent == ("" if real == "Exception" and cls is ChaoskitError else real), (cls, parent)
        if issubclass(cls, ChaoskitError):
            assert f"exit {cls.exit_code}" in rest, (cls, rest)


def test_the_drawing_names_nothing_that_is_gone() -> None:
    names = {cls.__name__ for cls in _defined()} | {"TypeError", "ValueError", "Exception"}
    assert set(_drawn()) <= names
