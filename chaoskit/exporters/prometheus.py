"""The run journals as Prometheus metrics: stage durations, rule-sync delays, injections, reverts, runs, breaches.

The journals are the single source of truth, so the exporter holds no state a journal could not rebuild: it reads
journals (a run's `run-finished` record carries its measurements and thresholds; `injection`, `reverted` and
`revert-failed` entries carry the faults) and counts each thing once, keyed by run id or injection id, however
often a journal is read again. Every metric lives on the exporter's own CollectorRegistry (nothing global), so
tests and a server in the same process never share series. One-shot CLI runs write a node_exporter textfile;
`serve` answers /metrics and re-reads a journal directory.
"""

# Over 300 lines: every metric family chaoskit exports, declared and fed in one place, so a name is unique at a glance.

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server, write_to_textfile
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from chaoskit.errors import UsageError
from chaoskit.journal import Injection, Journal, component_of
from chaoskit.model.factcheck import verdict_of
from chaoskit.model.record import RunRecord
from chaoskit.model.timeline import MeasurementResult, Sample

__all__ = ["BUCKETS", "ActiveFault", "Exporter", "JournalDir", "JournalError", "serve"]

# Stages run from a watch event (~10 ms) to a node coming back (minutes); ~2.5x steps cover 0.01-300 s in 15 buckets.
BUCKETS: tuple[float, ...] = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, math.inf)

REVERT_OUTCOMES = ("reverted", "manual", "failed")  # by the run itself, by `chaoskit revert`, or failed


class JournalError(UsageError):
    """A file given as a journal is not one (or holds a record this chaoskit cannot read)."""


@dataclass(frozen=True)
class ActiveFault:
    fault: str
    component: str
    node: str
    deadline_at: float  # after it the node's dead-man switch has healed the fault even if chaoskit died


def rule_sync_node(subject: str) -> str:
    """The node a rule-sync sample was read on: subjects are "node/<name>" or "<pod>@<node>"."""
    if subject.startswith("node/"):
        return subject.removeprefix("node/")
    return subject.rsplit("@", 1)[1] if "@" in subject else ""


class Exporter:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:  # one declaration per metric family: long, flat
        self.clock = clock
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.hpa_stage = Histogram(
            "chaoskit_hpa_stage_duration_seconds",
            "Time spent in one stage of the HPA-to-Ready path, per sample.",
            ["stage", "component"],
            buckets=BUCKETS,
            registry=r,
        )
        self.rule_sync = Histogram(
            "chaoskit_rule_sync_delay_seconds",
            "EndpointSlice change until a node's dataplane (or traffic) follows.",
            ["stage", "node"],
            buckets=BUCKETS,
            registry=r,
        )
        self.injections = Counter(
            "chaoskit_fault_injections",
            "Faults injected (journaled before being applied).",
            ["fault", "component"],
            registry=r,
        )
        self.reverts = Counter(
            "chaoskit_fault_reverts",
            "Fault reverts by outcome: reverted (by the run), manual (chaoskit revert), failed.",
            ["fault", "component", "outcome"],
            registry=r,
        )
        self.runs = Counter("chaoskit_runs", "Finished playbook runs by verdict.", ["playbook", "verdict"], registry=r)
        self.last_run = Gauge(
            "chaoskit_last_run_timestamp_seconds",
            "When the latest run of a playbook with this verdict finished.",
            ["playbook", "verdict"],
            registry=r,
        )
        self.score = Gauge(
            "chaoskit_resilience_score",
            "The resilience score (0-100) of the latest scored run of a playbook.",
            ["playbook"],
            registry=r,
        )
        self.probe_failures = Counter(
            "chaoskit_probe_phase_failures",
            "Judged probe phases that did not hold.",
            ["playbook", "probe", "phase"],
            registry=r,
        )
        self.breaches = Counter(
            "chaoskit_threshold_breaches",
            "Thresholds a run's measurements breached.",
            ["playbook", "measurement", "stage", "stat"],
            registry=r,
        )
        self.fact_checks = Counter(
            "chaoskit_fact_checks",
            "Steps by fact check: confirmed (each check said no where it must), mismatch (the "
            "component did not do what the fault says), inconclusive (a check could not tell the fault from its "
            "absence).",
            ["playbook", "fault", "verdict"],
            registry=r,
        )
        self.read_errors = Counter(
            "chaoskit_journal_read_errors", "Journals (or versions of one) that could not be read.", registry=r
        )
        self._lock = threading.Lock()
        self._seen: set[str] = set()  # run ids and journal entry keys already counted
        self._last_run: dict[tuple[str, str], float] = {}
        self._last_scored: dict[str, float] = {}  # playbook -> when its scored run shown finished
        self._pending: dict[Path, tuple[ActiveFault, ...]] = {}  # per journal, from Journal.pending()
        r.register(_ActiveFaults(self))

    # ---- feeding
    def observe_record(self, record: dict[str, Any]) -> bool:
        """Count one finished run (RunRecord.to_dict()); False when its run id was counted already.

        JournalError when the record cannot be read; then nothing of it is counted.
        """
        try:
            run = RunRecord.from_dict(record)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise JournalError(f"run {record.get('run_id')!r}: unreadable record: {type(exc).__name__}: {exc}") from exc
        finished = run.finished_at or run.started_at
        if not self._first(f"run:{run.run_id}" if run.run_id else f"run:{run.journal}:{record.get('started_at')}"):
            return False
        playbook, verdict = run.playbook, str(record.get("verdict", ""))
        self.runs.labels(playbook, verdict).inc()
        with self._lock:
            latest = max(finished, self._last_run.get((playbook, verdict), 0.0))  # an older journal read later
            self._last_run[(playbook, verdict)] = latest
        self.last_run.labels(playbook, verdict).set(latest)
        scored = run.score
        with self._lock:
            newest = finished >= self._last_scored.get(playbook, 0.0)
            if scored is not None and newest:
                self._last_scored[playbook] = finished
        if scored is not None and newest:
            self.score.labels(playbook).set(scored)
        for step in run.steps:
            if (fact := verdict_of(step.to_dict())) is not None:
                self.fact_checks.labels(playbook, step.fault, fact).inc()
        for probe in run.probes:
            for phase in probe.failed_phases():
                self.probe_failures.labels(playbook, probe.name, phase.phase).inc()
        for measurement in run.measurements:
            self.observe_measurement(measurement)
        for threshold in run.thresholds:
            if threshold.breached:
                self.breaches.labels(playbook, threshold.measurement, threshold.stage, threshold.stat).inc()
        return True

    def observe_measurement(self, result: MeasurementResult) -> None:
        for sample in result.samples:
            self.observe_sample(sample)

    def observe_sample(self, s: Sample) -> None:
        if s.measurement == "rule_sync":
            self.rule_sync.labels(s.stage, rule_sync_node(s.subject)).observe(s.seconds)
        else:
            self.hpa_stage.labels(s.stage, s.component).observe(s.seconds)

    def observe_journal(self, path: Path) -> int:
        """Count what `path` holds that was not counted yet; returns how many entries were new.

        JournalError when `path` is not a chaoskit journal (what was read before the bad line stays counted).
        """
        try:
            return self._observe_journal(path)
        except JournalError as exc:
            raise JournalError(f"{path}: {exc}") from exc
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise JournalError(f"{path} is not a chaoskit journal: {type(exc).__name__}: {exc}") from exc
        except OSError as exc:
            raise JournalError(f"cannot read {path}: {exc}") from exc

    def _observe_journal(self, path: Path) -> int:
        journal = Journal(path)
        faults: dict[str, str] = {}  # injection id -> fault, for the revert entries that name only the id
        new = 0
        for e in journal.entries():
            if e.kind == "injection":
                faults[e.data["id"]] = fault = str(e.data["fault"])
                if self._first(f"injection:{e.data['id']}"):
                    self.injections.labels(fault, component_of(fault)).inc()
                    new += 1
            elif e.kind in ("reverted", "revert-failed"):
                inj_id = str(e.data.get("id", ""))
                if self._first(f"{e.kind}:{inj_id}:{e.at!r}"):
                    fault = faults.get(inj_id, "unknown")
                    outcome = "failed" if e.kind == "revert-failed" else "manual" if e.data.get("by") else "reverted"
                    self.reverts.labels(fault, component_of(fault), outcome).inc()
                    new += 1
            elif e.kind == "run-finished" and isinstance(e.data.get("record"), dict):
                new += self.observe_record(e.data["record"])
        active = tuple(_active(inj) for inj in journal.pending())
        with self._lock:
            self._pending[path] = active
        return new

    def forget_journal(self, path: Path) -> None:
        """A journal that vanished no longer holds active faults (its counts stay: counters never go back)."""
        with self._lock:
            self._pending.pop(path, None)

    # ---- reading
    def active_faults(self) -> list[ActiveFault]:
        """Pending injections whose deadline has not passed: past it the node has healed itself."""
        now = self.clock()
        with self._lock:
            return [a for group in self._pending.values() for a in group if a.deadline_at > now]

    def write_textfile(self, path: Path) -> None:
        """Atomic write (temporary file + rename) in the node_exporter textfile-collector format (name it *.prom)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        write_to_textfile(str(path), self.registry)

    def _first(self, key: str) -> bool:
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
            return True


def _active(inj: Injection) -> ActiveFault:
    return ActiveFault(inj.fault, component_of(inj.fault), inj.node, inj.deadline_at)


class _ActiveFaults:
    """chaoskit_active_faults, computed at each scrape: a deadline passing lowers it without re-reading anything."""

    NAME = "chaoskit_active_faults"
    HELP = "Injected faults not reverted yet whose dead-man deadline has not passed."

    def __init__(self, exporter: Exporter) -> None:
        self.exporter = exporter

    def describe(self) -> Iterable[Metric]:
        return [GaugeMetricFamily(self.NAME, self.HELP, labels=["fault", "component", "node"])]

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(self.NAME, self.HELP, labels=["fault", "component", "node"])
        counts: dict[tuple[str, str, str], int] = {}
        for a in self.exporter.active_faults():
            key = (a.fault, a.component, a.node)
            counts[key] = counts.get(key, 0) + 1
        for labels, n in sorted(counts.items()):
            family.add_metric(list(labels), n)
        yield family


@dataclass
class JournalDir:
    """A directory of journals (*.jsonl) read again whenever a file's size or mtime changes."""

    exporter: Exporter
    root: Path
    say: Callable[[str], None] = lambda _: None  # told once per journal that cannot be read, with why
    _stamps: dict[Path, tuple[int, int]] = field(default_factory=dict, init=False)

    def refresh(self) -> int:
        """Read new and changed journals; returns how many entries were new."""
        current: dict[Path, tuple[int, int]] = {}
        for path in sorted(self.root.glob("*.jsonl")) if self.root.is_dir() else []:
            try:
                st = path.stat()
            except FileNotFoundError:
                continue  # removed between glob and stat
            current[path] = (st.st_mtime_ns, st.st_size)
        new = 0
        for path, stamp in current.items():
            if self._stamps.get(path) != stamp:
                try:
                    new += self.exporter.observe_journal(path)
                except JournalError as exc:  # one bad file must not stop a long-running server
                    self.exporter.read_errors.inc()
                    self.say(f"skipped: {exc}")
        for gone in self._stamps.keys() - current.keys():
            self.exporter.forget_journal(gone)
        self._stamps = current
        return new

    def watch(self, stop: threading.Event, interval: float = 5.0) -> None:
        """refresh() every `interval` seconds until `stop` is set."""
        while True:
            self.refresh()
            if stop.wait(interval):
                return


def serve(exporter: Exporter, port: int = 9464, address: str = "0.0.0.0") -> tuple[WSGIServer, threading.Thread]:
    """Answer /metrics for the exporter's registry in a daemon thread; shut down with server.shutdown()."""
    return start_http_server(port, address, registry=exporter.registry)
