"""What an e2e test touches, in a fault's own terms, and a host-wide registry that lets tests run side by side only
where they do not meet.

A test says `@touches(...)` (or a module's `pytestmark`): each `Touch` is a fault's `Radius` (the cluster, a component
on a node, a namespace) that the test either *breaks* (a fault it injects, a configuration it switches) or *watches*
(a diagnosis, a health check, a measurement across nodes that another test's fault would show in). Two touches meet
when either breaks and their radii meet (`Radius.meets`, the rule a suite's playbooks overlap by); two watchers
never meet. A test without the mark touches the whole cluster: it runs alone. `@touches()` with nothing: it reads
files or the API only.

Every xdist worker asks the registry before a test's setup and leaves after its teardown. The registry is a JSON file
under chaoskit's state home, read and written under an flock: a test starts when nothing holding meets it and no
test that asked before it and still waits meets it (first come, first served, as a suite's playbook that runs alone
keeps its place); an entry whose worker died is dropped. Chaoskit's own component leases still refuse two runs
breaking one component at once, so a wrong mark shows as a Locked run, never as two faults on one component.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import pytest

from chaoskit.cluster.cache import alive
from chaoskit.faults.base import Radius
from chaoskit.journal import state_home

How = Literal["breaks", "watches"]
NODES = ("chaoskit-control-plane", "chaoskit-worker", "chaoskit-worker2")  # kind-config.yaml's three nodes


@dataclass(frozen=True)
class Touch:
    radius: Radius
    how: How = "breaks"

    def meets(self, other: Touch) -> bool:
        return "breaks" in (self.how, other.how) and self.radius.meets(other.radius)

    def words(self) -> str:
        r = self.radius
        where = "the cluster" if r.scope == "cluster" else f"{r.component or r.scope} {r.where}".strip()
        return f"{self.how} {where}"


CLUSTER = Touch(Radius("cluster"))  # breaks the control plane, or every node at once: runs alone
WATCHES_CLUSTER = Touch(Radius("cluster"), "watches")  # a whole-cluster look: no fault anywhere may land in it


def on_node(component: str, where: str, how: How = "breaks") -> Touch:
    return Touch(Radius("node", where, component), how)


def namespace(name: str, how: How = "breaks") -> Touch:
    return Touch(Radius("namespace", name), how)


def every_node(component: str, how: How = "watches") -> tuple[Touch, ...]:
    """A component on each node: a measurement timing every node's kubelet or kube-proxy, say."""
    return tuple(on_node(component, n, how) for n in NODES)


CP, W1, W2 = NODES
# pods of its own placed on any node and reached through a Service: a kubelet or kube-proxy fault anywhere shows in it
WORKLOAD = (*every_node("kubelet"), *every_node("kube-proxy"))
# chaoskit installed in the cluster (agents, operator, CRDs; `chaoskit install` or the chart): one per cluster, and an
# operator on the host stands by while one is installed
INSTALL = namespace("chaoskit-system")
WATCHES_INSTALL = namespace("chaoskit-system", "watches")


def touches(*what: Touch | tuple[Touch, ...]) -> pytest.MarkDecorator:
    flat = [t for w in what for t in (w if isinstance(w, tuple) else (w,))]
    return pytest.mark.touches(*flat)


def of(item: pytest.Item) -> tuple[Touch, ...]:
    """What the test touches: its marks' touches, the whole cluster when it has no mark."""
    marks = list(item.iter_markers("touches"))
    if not marks:
        return (CLUSTER,)
    return tuple(t for m in marks for t in m.args)


def words(touched: tuple[Touch, ...]) -> str:
    return ", ".join(t.words() for t in touched) or "nothing"


@dataclass
class Entry:
    ticket: int
    pid: int
    test: str
    touched: list[dict[str, object]]
    holding: bool = False

    def touches(self) -> list[Touch]:
        return [Touch(Radius(**t["radius"]), t["how"]) for t in self.touched]  # type: ignore[arg-type]


class Registry:
    """The tests of one e2e session that hold or wait for their radius."""

    def __init__(self, home: Path | None = None, poll_s: float = 0.5) -> None:
        self.home = home or state_home()
        self.path, self.lock = self.home / "e2e-radii.json", self.home / "e2e-radii.lock"
        self.poll_s = poll_s

    def reset(self) -> None:
        """A new session starts with nobody holding anything (the controller, before any worker)."""
        with self._locked():
            self.path.write_text(json.dumps({"next": 0, "entries": []}))

    @contextmanager
    def holding(self, test: str, touched: tuple[Touch, ...]) -> Iterator[float]:
        """Hold `touched` for the test's life; yields how long it waited for it."""
        if not touched:
            yield 0.0
            return
        start, ticket = time.monotonic(), self._ask(test, touched)
        try:
            while not self._try(ticket):
                time.sleep(self.poll_s)
            yield time.monotonic() - start
        finally:
            self._leave(ticket)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.home.mkdir(parents=True, exist_ok=True)
        with self.lock.open("w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            yield

    def _load(self) -> tuple[int, list[Entry]]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            data = {"next": 0, "entries": []}
        return data["next"], [Entry(**e) for e in data["entries"] if alive(e["pid"])]

    def _save(self, next_ticket: int, entries: list[Entry]) -> None:
        self.path.write_text(json.dumps({"next": next_ticket, "entries": [asdict(e) for e in entries]}))

    def _ask(self, test: str, touched: tuple[Touch, ...]) -> int:
        with self._locked():
            ticket, entries = self._load()
            entries.append(Entry(ticket, os.getpid(), test, [asdict(t) for t in touched]))
            self._save(ticket + 1, entries)
            return ticket

    def _try(self, ticket: int) -> bool:
        with self._locked():
            next_ticket, entries = self._load()
            mine = next(e for e in entries if e.ticket == ticket)
            ahead = [e for e in entries if e.holding or e.ticket < ticket]
            if any(a.meets(b) for e in ahead if e is not mine for a in e.touches() for b in mine.touches()):
                return False
            mine.holding = True
            self._save(next_ticket, entries)
            return True

    def _leave(self, ticket: int) -> None:
        with self._locked():
            next_ticket, entries = self._load()
            self._save(next_ticket, [e for e in entries if e.ticket != ticket])
