"""One node round-trip for many diagnosers: the node scripts asked for one node at about the same moment are joined
into one script, run once, and each asker gets back its own sections.

Every diagnoser starts at once, so their first scripts for a node arrive within a few milliseconds of each other;
the first to arrive waits a short linger for the rest, then runs them all in one `docker exec` (or one agent call).
A command asked for twice in the same batch (the same text, outside a chain) runs once: `nothing read twice`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

S = TypeVar("S")  # what the node script gives back for one command (sources.Section)

LINGER = 0.08  # seconds the first script for a node waits for the others to join it

Run = Callable[[str, Mapping[str, str], float, Sequence[Sequence[str]]], dict[str, S]]


@dataclass
class _Batch(Generic[S]):
    commands: dict[str, str] = field(default_factory=dict)  # joined name -> command
    chains: list[tuple[str, ...]] = field(default_factory=list)
    timeout: float = 0.0
    alias: dict[str, str] = field(default_factory=dict)  # joined name -> the joined name that runs the same command
    askers: int = 0
    done: threading.Event = field(default_factory=threading.Event)
    found: dict[str, S] = field(default_factory=dict)

    def join(self, commands: Mapping[str, str], chains: Sequence[Sequence[str]], timeout: float) -> str:
        """Add one asker's commands under a prefix of its own, each command (or chain of commands) already in the
        batch run once for both; the prefix."""
        prefix = f"{self.askers}/"
        self.askers += 1
        known = {tuple(self.commands[n] for n in chain): chain for chain in self.chains}
        for chain in chains:
            same = known.get(tuple(commands[n] for n in chain))
            if same is not None:  # a window already scraped by another: its timing is the same
                self.alias.update({prefix + n: m for n, m in zip(chain, same, strict=True)})
                continue
            joined = tuple(prefix + n for n in chain)
            self.commands.update({prefix + n: commands[n] for n in chain})
            self.chains.append(joined)
            known[tuple(commands[n] for n in chain)] = joined
        chained = {n for chain in self.chains for n in chain}
        singles = {cmd: name for name, cmd in self.commands.items() if name not in chained}
        asked_chained = {n for chain in chains for n in chain}
        for name, cmd in commands.items():
            if name in asked_chained:
                continue
            if cmd in singles:
                self.alias[prefix + name] = singles[cmd]
            else:
                self.commands[prefix + name] = singles[cmd] = cmd
        self.timeout = max(self.timeout, timeout)
        return prefix

    def mine(self, prefix: str, names: Sequence[str], missing: S) -> dict[str, S]:
        return {n: self.found.get(self.alias.get(prefix + n, prefix + n), missing) for n in names}


class NodeBatches(Generic[S]):
    """Joins the node scripts asked within `linger` seconds of each other, per node; `missing` stands for a command
    whose output never came back."""

    def __init__(
        self, run: Run[S], missing: S, linger: float = LINGER, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.run, self.missing, self.linger, self.sleep = run, missing, linger, sleep
        self._open: dict[str, _Batch[S]] = {}
        self._lock = threading.Lock()

    def sections(
        self, node: str, commands: Mapping[str, str], timeout: float, chains: Sequence[Sequence[str]] = ()
    ) -> dict[str, S]:
        with self._lock:
            batch = self._open.get(node)
            first = batch is None
            if batch is None:
                batch = self._open[node] = _Batch[S]()
            prefix = batch.join(commands, chains, timeout)
        if not first:
            batch.done.wait(batch.timeout + self.linger + 5)  # the first asker runs it within its timeout
            return batch.mine(prefix, list(commands), self.missing)
        self.sleep(self.linger)
        with self._lock:
            del self._open[node]  # later askers start a batch of their own
        try:
            batch.found = self.run(node, batch.commands, batch.timeout, batch.chains)
        finally:
            batch.done.set()
        return batch.mine(prefix, list(commands), self.missing)
