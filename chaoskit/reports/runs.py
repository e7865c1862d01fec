"""What the run reports read: one run's record, or a suite's records with where each sat in the suite.

A suite is read through a protocol (suite.SuiteRecord matches it): the reports sit below the suite in the layers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from chaoskit.model.record import RunRecord
from chaoskit.model.score import suite_score


class SuiteRun(Protocol):
    """One playbook of a suite (suite.SuiteEntry)."""

    @property
    def file(self) -> str: ...

    @property
    def radius(self) -> str: ...

    @property
    def started_s(self) -> float: ...

    @property
    def finished_s(self) -> float: ...

    @property
    def record(self) -> RunRecord: ...


class Suite(Protocol):
    """Several playbooks run as one gate (suite.SuiteRecord)."""

    @property
    def name(self) -> str: ...

    @property
    def cluster(self) -> str: ...

    @property
    def started_at(self) -> float: ...

    @property
    def finished_at(self) -> float: ...

    @property
    def parallel(self) -> int: ...

    @property
    def runs(self) -> Sequence[SuiteRun]: ...

    @property
    def verdict(self) -> str: ...

    @property
    def exit_code(self) -> int: ...


@dataclass(frozen=True)
class Placed:
    """A run as a report shows it: its record, and when it was one of a suite, its file, radius and place in time."""

    record: RunRecord
    file: str = ""
    radius: str = ""
    started_s: float | None = None  # after the suite started
    finished_s: float | None = None


@dataclass(frozen=True)
class Shown:
    """What a run report covers: a run alone (its own name, verdict and times) or a suite."""

    name: str
    cluster: str
    verdict: str
    exit_code: int
    started_at: float
    finished_at: float
    score: float | None
    parallel: int | None
    runs: list[Placed]


def shown(record: RunRecord | Suite) -> Shown:
    if isinstance(record, RunRecord):
        one = Placed(record)
        return Shown(
            record.playbook,
            record.cluster,
            record.verdict,
            record.exit_code,
            record.started_at,
            record.finished_at,
            record.score,
            None,
            [one],
        )
    runs = [Placed(e.record, e.file, e.radius, e.started_s, e.finished_s) for e in record.runs]
    return Shown(
        record.name,
        record.cluster,
        record.verdict,
        record.exit_code,
        record.started_at,
        record.finished_at,
        suite_score(p.record for p in runs),
        record.parallel,
        runs,
    )
