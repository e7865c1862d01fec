"""Running a playbook: recognise the cluster → deploy the workload → steady state before → the steps (each one
locked, journaled, armed, injected, held, reverted) → steady state after → verdict.

Exit codes, one meaning each: 0 passed · 1 deviated (the system: an effect not seen, no recovery, steady state or
threshold lost) · 4 chaoskit could not do its job (aborted before injecting, arm/inject/revert failed) · 130
interrupted. Every injected fault is reverted on every path.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from chaoskit import workloads
from chaoskit.checks.base import Check
from chaoskit.cluster.kind import NodeContainer
from chaoskit.cluster.proxymode import ProxyModeUnsupported, configured_mode, set_mode
from chaoskit.diagnosers.run import diagnose
from chaoskit.engine import FaultResult, default_deadline, poll, run_fault
from chaoskit.errors import EXIT_BREACHED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TOOL, ChaoskitError, UsageError
from chaoskit.faults.base import Env, Fault
from chaoskit.journal import Journal
from chaoskit.measurements.base import Measurement
from chaoskit.model.playbook import ConcurrentStep, FaultStep, Playbook
from chaoskit.model.thresholds import evaluate
from chaoskit.registry import CHECKS, FAULTS, MEASUREMENTS
from chaoskit.safety import acquire, holder_id, release

Verdict = Literal["passed", "deviated", "aborted", "error", "interrupted"]
EXIT_CODES: dict[Verdict, int] = {
    "passed": EXIT_OK, "deviated": EXIT_BREACHED, "aborted": EXIT_TOOL, "error": EXIT_TOOL,
    "interrupted": EXIT_INTERRUPTED,
}  # fmt: skip


@dataclass
class CheckRecord:
    check: str
    ok: bool
    detail: str
    seconds: float


@dataclass
class StepRecord:
    step: str
    fault: str
    node: str
    summary: str = ""
    effect_s: float | None = None
    held_s: float = 0.0
    recovery_s: float | None = None
    errors: list[str] = field(default_factory=list)  # the system deviated
    failures: list[str] = field(default_factory=list)  # chaoskit could not arm, inject or revert

    @property
    def ok(self) -> bool:
        return not self.errors and not self.failures and self.effect_s is not None and self.recovery_s is not None


@dataclass
class RunRecord:
    playbook: str
    cluster: str
    namespace: str
    journal: str
    run_id: str
    started_at: float
    finished_at: float = 0.0
    before: list[CheckRecord] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    after: list[CheckRecord] = field(default_factory=list)
    measurements: list[dict[str, Any]] = field(default_factory=list)  # MeasurementResult.to_dict()
    thresholds: list[dict[str, Any]] = field(default_factory=list)  # each threshold with its observed value
    diagnoses: list[dict[str, Any]] = field(default_factory=list)  # {"when": before|during|after, "report": ...}
    verdict: Verdict = "passed"
    errors: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "exit_code": self.exit_code}


def resolve_node(nodes: list[NodeContainer], wanted: str | None, default_role: str) -> str:
    """A node name from a target (name, role or "any"); a role picks its first node, by name."""
    names = [n.name for n in nodes]
    if wanted in names:
        return wanted
    role = default_role if wanted in (None, "any") else wanted
    for n in sorted(nodes, key=lambda n: n.name):
        if n.role == role:
            return n.name
    raise UsageError(f"no node {wanted!r} (role {role}) in this cluster; nodes: {', '.join(names)}")


def fault_for(step: FaultStep) -> Fault:
    fault: Fault = FAULTS.get(step.fault)()  # type: ignore[assignment]
    return fault


def step_deadline(step: FaultStep) -> float:
    """The step's own deadline, or the fault's default (which knows how long its effect may take to show)."""
    return step.deadline if "deadline" in step.model_fields_set else default_deadline(fault_for(step), step.duration)


def plan_steps(pb: Playbook, nodes: list[NodeContainer]) -> list[dict[str, Any]]:
    """What --dry-run prints: per step the exact node, the commands, their reverse and the deadline."""
    out = []
    for step in pb.spec.fault_steps():
        fault = fault_for(step)
        node = resolve_node(nodes, step.target.node if step.target else None, fault.target_role)
        params = FAULTS.params_model(step.fault).model_validate(step.params)
        plan = fault.plan(node, params)
        out.append({
            "step": step.name, "fault": step.fault, "node": node, "summary": plan.summary,
            "after_s": step.after, "hold_s": step.duration, "deadline_s": step_deadline(step),
            **plan.steps(),
        })  # fmt: skip
    return out


def _check(env: Env, name: str, params: dict[str, Any], timeout: float) -> CheckRecord:
    check: Check = CHECKS.get(name)()  # type: ignore[assignment]
    model = CHECKS.params_model(name).model_validate(params)
    last = ["not run"]

    def passes() -> bool:
        outcome = check.run(env, model)
        last[0] = outcome.detail
        return outcome.ok

    took = poll(passes, timeout, interval=1.0)
    return CheckRecord(name, took is not None, last[0], took if took is not None else timeout)


class Runner:
    def __init__(self, env: Env, nodes: list[NodeContainer], journal: Journal, say: Callable[[str], None]) -> None:
        self.env, self.nodes, self.journal, self.say = env, nodes, journal, say
        self.stop = threading.Event()
        self.run_id = uuid.uuid4().hex[:8]
        self.restore_proxy_mode: str | None = None
        self.diagnose_enabled = False  # kube-proxy's mode before the playbook switched it

    def run(self, pb: Playbook) -> RunRecord:
        rec = RunRecord(pb.name, pb.spec.cluster, pb.spec.namespace, str(self.journal.path), self.run_id, time.time())
        self.journal.append("run-started", playbook=pb.name, run_id=self.run_id, cluster=pb.spec.cluster)
        try:
            self._run(pb, rec)
        except KeyboardInterrupt:
            self.stop.set()
            rec.verdict = "interrupted"
            rec.errors.append("interrupted; every injected fault was reverted")
        except ChaoskitError as exc:
            rec.verdict = "error"
            rec.errors.append(str(exc))
        finally:
            if pb.spec.workload is not None:
                self._cleanup(pb)
            if self.restore_proxy_mode is not None:
                self._proxy_mode(self.restore_proxy_mode)
            rec.finished_at = time.time()
            self.journal.append("run-finished", verdict=rec.verdict, record=rec.to_dict())
        return rec

    def _run(self, pb: Playbook, rec: RunRecord) -> None:
        if pb.spec.kube_proxy_mode is not None:
            self._proxy_mode(pb.spec.kube_proxy_mode)
        if pb.spec.workload is not None:
            self._deploy(pb)
        rec.before = [self._steady(c.check, c.params, c.timeout, "before") for c in pb.spec.steady_state]
        if not all(c.ok for c in rec.before):
            rec.verdict = "aborted"
            rec.errors.append("steady state not met before injecting; nothing was injected")
            return
        self.diagnose_enabled = pb.spec.diagnose
        self._diagnose(rec, "before")
        running = self._start_measurements(pb)
        try:
            for step in pb.spec.steps:
                group = step.concurrent if isinstance(step, ConcurrentStep) else [step]
                done = self._group(group, rec)
                rec.steps += done
                if self.stop.is_set():
                    raise KeyboardInterrupt
                if any(s.failures for s in done):
                    rec.verdict = "error"
                    rec.errors.append("chaoskit could not run a step (see its failures); later steps not run")
                    return
            rec.after = [self._steady(c.check, c.params, c.timeout, "after") for c in pb.spec.steady_state]
            self._diagnose(rec, "after")
        finally:
            results = {m.label: m.stop() for m in running}
            rec.measurements = [r.to_dict() for r in results.values()]
        breaches = [evaluate(t, results) for t in pb.spec.thresholds]
        rec.thresholds = [b.to_dict() for b in breaches]
        for b in breaches:
            self.say(f"threshold {b.measurement} {b.stat} {b.stage}: {'BREACHED' if b.breached else 'ok'} ({b.reason})")
        if not all(s.ok for s in rec.steps) or not all(c.ok for c in rec.after) or any(b.breached for b in breaches):
            rec.verdict = "deviated"

    def _start_measurements(self, pb: Playbook) -> list[Measurement]:
        """Every measurement started before the first fault; one that cannot start aborts the run (none injected)."""
        running: list[Measurement] = []
        try:
            for ref in pb.spec.measurements:
                params = MEASUREMENTS.params_model(ref.type).model_validate(ref.params)
                namespace = getattr(params, "namespace", "") or pb.spec.namespace
                m: Measurement = MEASUREMENTS.get(ref.type)(self.env, params, ref.name, namespace)  # type: ignore[call-arg,assignment]
                m.start()
                running.append(m)
                self.say(f"measuring {ref.name} ({ref.type})")
        except BaseException:
            for m in running:
                m.stop()
            raise
        return running

    def _proxy_mode(self, mode: str) -> None:
        before = configured_mode(self.env.kube)
        try:
            set_mode(self.env.kube, self.env.nodes, mode, say=self.say)
        except ProxyModeUnsupported as exc:
            raise UsageError(f"spec.kubeProxyMode {mode}: {exc}") from exc
        self.restore_proxy_mode = None if mode == self.restore_proxy_mode else before

    def _steady(self, name: str, params: dict[str, Any], timeout: float, when: str) -> CheckRecord:
        record = _check(self.env, name, params, timeout)
        self.say(f"steady state {when}: {name} {'ok' if record.ok else 'FAILED'} ({record.detail})")
        return record

    def _diagnose(self, rec: RunRecord, when: str, step: str = "") -> None:
        """A diagnosis of every component into the run record; never fails the run (it reports, it does not judge)."""
        if not self.diagnose_enabled:
            return
        control_plane = next((n.name for n in self.nodes if n.role == "control-plane"), self.nodes[0].name)
        try:
            found = diagnose(self.env, control_plane, [n.name for n in self.nodes])
        except Exception as exc:  # a broken diagnoser must not cost the experiment
            self.say(f"diagnosis {when} failed: {type(exc).__name__}: {exc}")
            return
        failing = [f"{r.component}@{r.subject}: {r.status}" for r in found.reports if r.status != "ok"]
        self.say(f"diagnosis {when}{f' ({step})' if step else ''}: {', '.join(failing) or 'every component ok'}"
                 f" ({found.duration_s:.1f}s)")  # fmt: skip
        rec.diagnoses.append({"when": when, "step": step, "report": found.to_dict()})

    def _group(self, group: list[FaultStep], rec: RunRecord) -> list[StepRecord]:
        """Steps that run together; each component they break is locked once for the whole group."""
        seconds = max(s.after + step_deadline(s) for s in group)
        locks = []
        try:
            for component in sorted({fault_for(s).component for s in group}):
                locks.append(acquire(self.env.kube, component, holder_id(self.run_id), seconds))
            during = _Once(lambda: self._diagnose(rec, "during", ", ".join(s.name or s.fault for s in group)))
            if len(group) == 1:
                return [self._step(group[0], during)]
            return self._together(group, during)
        finally:
            for lock in locks:
                release(self.env.kube, lock)

    def _together(self, group: list[FaultStep], during: _Once) -> list[StepRecord]:
        with ThreadPoolExecutor(max_workers=len(group)) as pool:
            futures = [pool.submit(self._step, s, during) for s in group]
            try:
                return [f.result() for f in futures]
            except KeyboardInterrupt:
                self.stop.set()  # the threads cut their holds short and revert
                for f in futures:
                    f.result()
                raise

    def _step(self, step: FaultStep, on_effect: Callable[[], None]) -> StepRecord:
        fault = fault_for(step)
        node = resolve_node(self.nodes, step.target.node if step.target else None, fault.target_role)
        rec = StepRecord(step.name, step.fault, node)
        if step.after and self.stop.wait(step.after):
            return rec
        params = FAULTS.params_model(step.fault).model_validate(step.params)
        result: FaultResult = run_fault(
            self.env, fault, node, params, duration=step.duration, deadline=step_deadline(step),
            journal=self.journal, say=lambda m: self.say(f"[{step.name}] {m}"), stop=self.stop, on_effect=on_effect,
        )  # fmt: skip
        rec.summary, rec.effect_s, rec.held_s = result.summary, result.effect_s, result.held_s
        rec.recovery_s, rec.errors, rec.failures = result.recovery_s, result.errors, result.failures
        return rec

    def _deploy(self, pb: Playbook) -> None:
        w, ns = pb.spec.workload, pb.spec.namespace
        assert w is not None
        kube = self.env.kube
        # an earlier run's namespace may still be terminating: nothing can be created in it until it is gone
        kube.wait(f"namespace {ns} of an earlier run to be deleted", lambda: not workloads.terminating(kube, ns), 180)
        for obj in (
            workloads.namespace(ns),
            workloads.web_deployment(ns, replicas=w.replicas),
            workloads.service(ns),
            workloads.hpa(ns, min_replicas=w.hpa.min_replicas, max_replicas=w.hpa.max_replicas,
                          cpu_percent=w.hpa.cpu_percent),
        ):  # fmt: skip
            kube.apply(obj)
        kube.wait("the web workload to be ready", lambda: workloads.ready_replicas(self.env.kube, ns) >= 1, 120)
        self.say(f"workload ready in namespace {ns}")
        time.sleep(w.load.start_after)
        url = f"http://web.{ns}.svc.cluster.local/burn?ms={w.load.burn_ms}"
        kube.apply(workloads.load_generator(ns, url, concurrency=w.load.concurrency))

    def _cleanup(self, pb: Playbook) -> None:
        try:
            self.env.kube.delete(f"/api/v1/namespaces/{pb.spec.namespace}")
        except ChaoskitError as exc:
            self.say(f"could not delete namespace {pb.spec.namespace}: {exc}")


class _Once:
    """Calls `action` the first time it is called, from whichever step's thread gets there first."""

    def __init__(self, action: Callable[[], None]) -> None:
        self.action, self.lock, self.done = action, threading.Lock(), False

    def __call__(self) -> None:
        with self.lock:
            if self.done:
                return
            self.done = True
        self.action()
