"""Several playbooks run as one suite: one summary, one verdict and exit code, one record, one JUnit file, one report.

What may overlap (the rule `chaoskit run` documents): each fault has a radius.
- cluster: the API server and etcd, the scheduler and the controller manager (every playbook's workload is created,
  scheduled and given endpoints through them); kube-proxy's slow sync and a mode switch (every node's kube-proxy).
  A playbook with any of these runs alone.
- node: the kubelet, the container runtime and kube-proxy (frozen, or its rules kept flushed) of one node. Two such
  playbooks overlap when their nodes differ, but a kubelet fault never overlaps a kube-proxy fault (a NotReady
  node's endpoints churn, and every kube-proxy reprograms them); while one breaks a node, the others' steady-state
  checks leave it (and its pods) out.
- namespace: a quota in one namespace; it overlaps anything that is not cluster-wide.
A playbook whose measurements time every node's dataplane (a scale-up's pods started and programmed on each node,
rule sync, node loss) also meets every kubelet and kube-proxy fault: a node broken by another playbook would land in
its figures.
Playbooks that may overlap go first, at most `parallel` at a time, each started as soon as nothing running meets
it; then the cluster-wide ones, one by one, those taking the API server away last (a fault's `cuts_api`: down,
unreachable, or its certificate refused; leaked watches leave it answering): while it is down or unreachable the
scheduler and the controller manager lose their leases and exit, and the kubelet brings them back under its
crash-loop back-off (up to 5 min on a stock kubelet, 10 s on chaoskit's cluster), which would otherwise land in the
recovery of a later playbook that stops or restarts them. Within each group the given order is kept. The component
leases still stop two runs (of this suite or anyone's) from breaking the same thing at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaoskit.faults.base import Radius
from chaoskit.model.record import EXIT_CODES, RunRecord, Verdict
from chaoskit.model.score import suite_score
from chaoskit.run.peers import Peers
from chaoskit.run.plan import RunPlan
from chaoskit.runner import Runner

# The worst verdict wins the suite: interrupted, then chaoskit's own failure, then the system's deviation.
SEVERITY: dict[Verdict, int] = {"passed": 0, "deviated": 1, "aborted": 2, "error": 3, "interrupted": 4}
TICK_S = 0.5  # how long the suite's main thread may go without looking for a Ctrl-C


@dataclass(frozen=True)
class Planned:
    """A planned run of the suite with where its faults reach."""

    file: Path
    plan: RunPlan
    radii: tuple[Radius, ...]
    cuts_api: bool = False  # a fault of it takes the API server away (down, unreachable, untrusted)
    every_node: frozenset[str] = frozenset()  # node components its measurements time on every node

    @classmethod
    def of(cls, file: Path, run: RunPlan) -> Planned:
        steps = run.steps
        return cls(file, run, tuple(s.radius for s in steps), any(s.fault.cuts_api for s in steps), run.every_node)

    @property
    def alone(self) -> bool:
        """Runs with nothing else: a cluster-wide fault, a kube-proxy mode switch (every node's kube-proxy), or
        simulated nodes (the whole control plane's load)."""
        return self.plan.changes.any or any(r.scope == "cluster" for r in self.radii)

    @property
    def nodes(self) -> frozenset[str]:
        return frozenset(r.where for r in self.radii if r.scope == "node")

    def meets(self, other: Planned) -> bool:
        return (
            self.alone
            or other.alone
            or any(a.meets(b) for a in self.radii for b in other.radii)
            or self.times_a_fault_of(other)
            or other.times_a_fault_of(self)
        )

    def times_a_fault_of(self, other: Planned) -> bool:
        """Whether a node fault of `other` would show in the figures of this one's measurements."""
        return any(r.scope == "node" and r.component in self.every_node for r in other.radii)

    def radius_words(self) -> str:
        if self.alone:
            return "cluster"
        return ", ".join(sorted({f"{r.scope} {r.where}" for r in self.radii})) or "none"


def order(planned: list[Planned]) -> list[Planned]:
    """What may overlap first, then what runs alone, those taking the API server away last; the given order within
    each."""
    return sorted(planned, key=lambda p: (p.alone, p.alone and p.cuts_api))  # stable: given order kept


def startable(pending: list[Planned], running: list[Planned], parallel: int) -> list[Planned]:
    """Which pending playbooks start now: first-fit in order, none that meets a running one or one started before it
    in this pass, and only the first of the pending when it must run alone and nothing runs."""
    chosen: list[Planned] = []
    for p in pending:
        if len(running) + len(chosen) >= parallel:
            break
        if any(p.meets(q) for q in running + chosen):
            if p.alone:
                break  # what runs alone keeps its place: nothing after it jumps ahead
            continue
        chosen.append(p)
    return chosen


@dataclass
class SuiteEntry:
    file: str
    radius: str
    started_s: float  # after the suite started
    finished_s: float
    record: RunRecord


@dataclass
class SuiteRecord:
    name: str
    cluster: str
    started_at: float
    parallel: int
    finished_at: float = 0.0
    runs: list[SuiteEntry] = field(default_factory=list)
    diagnoses: list[dict[str, Any]] = field(default_factory=list)  # before the first run and after the last
    interrupted: bool = False

    @property
    def verdict(self) -> Verdict:
        if self.interrupted:
            return "interrupted"
        return max((e.record.verdict for e in self.runs), key=SEVERITY.__getitem__, default="passed")

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.name,
            "cluster": self.cluster,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "parallel": self.parallel,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "score": suite_score(e.record for e in self.runs),
            "diagnoses": self.diagnoses,
            "runs": [
                {
                    "file": e.file,
                    "radius": e.radius,
                    "started_s": round(e.started_s, 1),
                    "finished_s": round(e.finished_s, 1),
                    **e.record.to_dict(),
                }
                for e in self.runs
            ],
        }


MakeRunner = Callable[[Planned, Peers], Runner]
Diagnose = Callable[[str], "dict[str, Any] | None"]


def run_suite(
    name: str,
    cluster: str,
    planned: list[Planned],
    make_runner: MakeRunner,
    *,
    parallel: int,
    say: Callable[[str], None],
    diagnose: Diagnose | None = None,
) -> SuiteRecord:
    """Run every playbook, overlapping what may; Ctrl-C (or SIGTERM) stops every run, each reverting its faults.

    `diagnose(when)`, if given, diagnoses the cluster before the first run and after the last (runs then diagnose
    only while their faults hold: the same before and after, once per playbook, would only repeat itself)."""
    suite = SuiteRecord(name, cluster, time.time(), parallel)
    if diagnose is not None and (found := diagnose("before")) is not None:
        suite.diagnoses.append(found)
    t0, peers = time.monotonic(), Peers()
    pending, running = order(planned), dict[Future[RunRecord], tuple[Planned, Runner, float]]()
    lock = threading.Lock()

    def one(p: Planned, runner: Runner) -> RunRecord:
        peers.join(runner.run_id, p.nodes)
        try:
            return runner.run(p.plan)
        finally:
            peers.leave(runner.run_id)

    with ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="chaoskit-run") as pool:
        try:
            while pending or running:
                for p in startable(pending, [q for q, _, _ in running.values()], parallel):
                    pending.remove(p)
                    runner = make_runner(p, peers)
                    say(f"starting {p.plan.name} (radius: {p.radius_words()})")
                    running[pool.submit(one, p, runner)] = (p, runner, time.monotonic() - t0)
                # never an endless wait: a Ctrl-C the kernel hands to a run's thread only flags the main thread,
                # which notices it when it next runs Python (a run holds its faults until then)
                done, _ = wait(running, timeout=TICK_S, return_when=FIRST_COMPLETED)
                for f in done:
                    p, runner, started = running.pop(f)
                    record = f.result()
                    with lock:
                        suite.runs.append(
                            SuiteEntry(str(p.file), p.radius_words(), started, time.monotonic() - t0, record)
                        )
                    say(f"finished {p.plan.name}: {record.verdict} ({time.monotonic() - t0 - started:.0f}s)")
        except KeyboardInterrupt:
            suite.interrupted = True
            for _, runner, _ in running.values():
                runner.stop.set()  # each run cuts its hold short and reverts
            for f, (p, _, started) in list(running.items()):
                suite.runs.append(SuiteEntry(str(p.file), p.radius_words(), started, time.monotonic() - t0, f.result()))
    if diagnose is not None and not suite.interrupted and (found := diagnose("after")) is not None:
        suite.diagnoses.append(found)
    suite.finished_at = time.time()
    return suite
