"""Name → class registries for the catalog: faults, steady-state checks and measurements.

A registry is an ordinary object, never a class-level global, so tests build their own and nothing leaks between
them. The module-level `FAULTS`, `CHECKS` and `MEASUREMENTS` hold the real catalog; `load_catalog()` imports the
catalog packages so their `@FAULTS.register(...)` decorators run.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from pydantic import BaseModel

from chaoskit.errors import DuplicateName, UnknownName

__all__ = [
    "CATALOG",
    "CHECKS",
    "FAULTS",
    "MEASUREMENTS",
    "Catalog",
    "Registered",
    "Registry",
    "close_matches",
    "load_catalog",
]


class Registered(Protocol):
    """What a registered class exposes: a pydantic model of its params, and a docstring that is its user docs.

    A plain class attribute (`Params = SchedulerDownParams`) or a nested `class Params(BaseModel)` both satisfy it.
    """

    __doc__: str | None

    @property
    def Params(self) -> type[BaseModel]: ...  # a property so both a class attribute and a nested class satisfy it


T = TypeVar("T", bound=Registered)


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Names a typo most likely meant, best first."""
    return difflib.get_close_matches(word, list(candidates), n=n, cutoff=0.6)


class Registry(Generic[T]):
    """Names to classes; `kind` ("fault", "check", "measurement") words the errors."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._classes: dict[str, type[T]] = {}

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        """Class decorator: registers the class under `name` and returns it unchanged."""

        def add(cls: type[T]) -> type[T]:
            self.add(name, cls)
            return cls

        return add

    def add(self, name: str, cls: type[T]) -> None:
        if not name or name != name.strip() or any(c.isspace() for c in name):
            raise ValueError(f"{self.kind} name {name!r} must be non-empty and hold no whitespace")
        if name in self._classes:
            raise DuplicateName(
                f"{self.kind} {name!r} is already registered to {_qualname(self._classes[name])}; "
                f"refusing {_qualname(cls)}"
            )
        params = getattr(cls, "Params", None)
        # checked here, not at first use, so a broken plugin fails on import rather than mid-run
        if not (isinstance(params, type) and issubclass(params, BaseModel)):
            raise TypeError(f"{_qualname(cls)} must have a `Params` pydantic model to be registered as a {self.kind}")
        if not (cls.__doc__ or "").strip():
            raise TypeError(f"{_qualname(cls)} needs a docstring: it is the {self.kind}'s user documentation")
        self._classes[name] = cls

    def get(self, name: str) -> type[T]:
        try:
            return self._classes[name]
        except KeyError:
            raise UnknownName(self.kind, name, self.suggest(name), self.names()) from None

    def params_model(self, name: str) -> type[BaseModel]:
        """The Params model of `name` (typed, unlike reading `.Params` through the protocol)."""
        params: type[BaseModel] = getattr(self.get(name), "Params")  # noqa: B009 - protocol property reads as a method
        return params

    def suggest(self, name: str) -> list[str]:
        return close_matches(name, self._classes)

    def names(self) -> list[str]:
        return sorted(self._classes)

    def items(self) -> list[tuple[str, type[T]]]:
        return sorted(self._classes.items())

    def __contains__(self, name: object) -> bool:
        return name in self._classes

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._classes)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()!r})"

    def extended(self, entries: Iterable[tuple[str, type[T]]]) -> Registry[T]:
        """A copy holding `entries` too; this one is left as it was."""
        copy: Registry[T] = Registry(self.kind)
        copy._classes = dict(self._classes)
        for name, cls in entries:
            copy.add(name, cls)
        return copy


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


FAULTS: Registry[Registered] = Registry("fault")
CHECKS: Registry[Registered] = Registry("check")
MEASUREMENTS: Registry[Registered] = Registry("measurement")


@dataclass(frozen=True)
class Catalog:
    """The three registries a run looks names up in, passed as one object (tests pass their own)."""

    faults: Registry[Registered]
    checks: Registry[Registered]
    measurements: Registry[Registered]

    def extended(
        self,
        faults: Iterable[tuple[str, type[Registered]]] = (),
        checks: Iterable[tuple[str, type[Registered]]] = (),
        measurements: Iterable[tuple[str, type[Registered]]] = (),
    ) -> Catalog:
        """A catalog with these entries too (a test's own fault beside the real ones); the registries it was made from
        are left as they were."""
        return Catalog(
            self.faults.extended(faults), self.checks.extended(checks), self.measurements.extended(measurements)
        )


CATALOG = Catalog(FAULTS, CHECKS, MEASUREMENTS)
CATALOG_PACKAGES = ("chaoskit.faults", "chaoskit.checks", "chaoskit.measurements")


def load_catalog(packages: Iterable[str] = CATALOG_PACKAGES) -> None:
    """Import every module of the catalog packages so their register decorators run; absent packages are skipped."""
    for package in packages:
        try:
            module = importlib.import_module(package)
        except ModuleNotFoundError as exc:
            if exc.name == package:  # that part of the catalog does not exist (yet)
                continue
            raise
        for info in pkgutil.walk_packages(getattr(module, "__path__", []), prefix=f"{package}."):
            importlib.import_module(info.name)
