"""The run journal: one JSON object per line, appended and fsynced *before* each action it records.

An injection is journaled before the fault is applied, so `chaoskit revert JOURNAL`
can undo whatever a dead run left, and every report is derived from this file.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

# "changed"/"restored": a change made to the user's own objects (an HPA's minReplicas) and its undo
EntryKind = Literal[
    "run-started", "injection", "reverted", "revert-failed", "changed", "restored", "run-finished", "report-written"
]


@dataclass(frozen=True)
class Entry:
    kind: EntryKind
    at: float  # wall clock, seconds since the epoch
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Injection:
    """What was (about to be) broken, and how to heal it without chaoskit's memory."""

    id: str
    fault: str
    node: str
    revert: tuple[str, ...]  # shell lines the dead-man switch runs on `node`
    deadline_at: float  # wall clock when the node heals itself
    params: dict[str, Any] = field(default_factory=dict)
    lock: str = ""  # the component lease its run held (a journal from before leases per node: the component)
    # the revert's last lines, which fail while the fault holds: `chaoskit revert` asks them again of what was
    # reverted (a journal from before verify lines has none)
    verify: tuple[str, ...] = ()

    @property
    def lock_name(self) -> str:
        return self.lock or component_of(self.fault)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Injection:
        return cls(
            id=data["id"],
            fault=data["fault"],
            node=data["node"],
            revert=tuple(data["revert"]),
            deadline_at=float(data["deadline_at"]),
            params=dict(data.get("params") or {}),
            lock=data.get("lock", ""),
            verify=tuple(data.get("verify") or ()),
        )


def state_home() -> Path:
    """Where chaoskit keeps what outlives a run (XDG_STATE_HOME, default ~/.local/state/chaoskit)."""
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "chaoskit"


def default_journal_dir() -> Path:
    """Where `chaoskit run` writes journals unless told otherwise, and where `metrics serve` reads them."""
    return state_home() / "journals"


def component_of(fault: str) -> str:
    """Fault names are "<component>.<fault>" (kube-proxy.freeze): the component is the part before the dot."""
    return fault.split(".", 1)[0]


class Journal:
    def __init__(self, path: Path, on_append: Callable[[Journal], None] | None = None) -> None:
        self.path = path
        self.on_append = on_append  # told after each entry is on disk (the operator mirrors it into the cluster)

    def append(self, kind: EntryKind, **data: Any) -> Entry:
        entry = Entry(kind, time.time(), data)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(asdict(entry), sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())  # the record must survive a SIGKILL that follows right after
        if self.on_append is not None:
            self.on_append(self)
        return entry

    def injection(self, inj: Injection) -> Entry:
        return self.append("injection", **asdict(inj))

    def entries(self) -> Iterator[Entry]:
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    raw = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by a kill: everything before it still counts
                yield Entry(raw["kind"], raw["at"], raw.get("data") or {})

    def pending_changes(self) -> list[dict[str, Any]]:
        """Changes to the user's objects not restored yet, in the order they were made."""
        changed: dict[str, dict[str, Any]] = {}
        for e in self.entries():
            if e.kind == "changed":
                changed[e.data["id"]] = e.data
            elif e.kind == "restored":
                changed.pop(e.data.get("id", ""), None)
        return list(changed.values())

    def reverted(self) -> list[Injection]:
        """Injections whose last record is a successful revert, in the order they were made."""
        injected: dict[str, Injection] = {}
        done: set[str] = set()
        for e in self.entries():
            if e.kind == "injection":
                injected[e.data["id"]] = Injection.from_data(e.data)
                done.discard(e.data["id"])
            elif e.kind == "reverted":
                done.add(e.data.get("id", ""))
        return [inj for i, inj in injected.items() if i in done]

    def pending(self) -> list[Injection]:
        """Injections with no successful revert recorded, in the order they were made."""
        injected: dict[str, Injection] = {}
        for e in self.entries():
            if e.kind == "injection":
                injected[e.data["id"]] = Injection.from_data(e.data)
            elif e.kind == "reverted":
                injected.pop(e.data.get("id", ""), None)
        return list(injected.values())
