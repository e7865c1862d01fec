"""Node exec: "run this argv on node N", the seam every fault and node-side check stands on.

DockerNodeExec runs commands in kind node containers (`docker exec`); FakeNodeExec
records them for unit tests. Failures carry a command to paste and its output tail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from chaoskit.cluster.shell import Completed, FakeRunner, Runner


class NodeExec(Protocol):
    def run(
        self,
        node: str,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> Completed: ...


@dataclass(frozen=True)
class DockerNodeExec:
    runner: Runner

    def run(
        self,
        node: str,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> Completed:
        return self.runner.run(["docker", "exec", "-i", node, *argv], input=input, timeout=timeout, check=check)


@dataclass
class FakeNodeExec:
    """Answers from a FakeRunner keyed by (node, *argv); records (node, argv) pairs."""

    runner: FakeRunner = field(default_factory=FakeRunner)

    @property
    def calls(self) -> list[tuple[str, ...]]:
        return self.runner.calls

    def run(
        self,
        node: str,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> Completed:
        return self.runner.run([node, *argv], input=input, timeout=timeout, check=check)
