"""A check answers one question about the live cluster; the runner polls it until it passes or times out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from pydantic import BaseModel

from chaoskit.env import Env
from chaoskit.model.params import NoParams
from chaoskit.registry import CHECKS


@dataclass(frozen=True)
class Outcome:
    ok: bool
    detail: str  # what was seen: the evidence for a report


class Check(ABC):
    name: ClassVar[str]
    Params: ClassVar[type[BaseModel]] = NoParams

    @abstractmethod
    def run(self, env: Env, params: BaseModel) -> Outcome: ...


CheckT = TypeVar("CheckT", bound=type[Check])


def register(cls: CheckT) -> CheckT:
    CHECKS.add(cls.name, cls)
    return cls
