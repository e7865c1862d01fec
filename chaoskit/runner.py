"""Running a playbook: recognise the cluster → deploy the workload → steady state before → the steps (each one
locked, journaled, armed, injected, held, reverted) → steady state after → verdict.

Exit codes, one meaning each: 0 passed · 1 deviated (the system: an effect not seen, no recovery, steady state or
threshold lost) · 4 chaoskit could not do its job (aborted before injecting, arm/inject/revert failed) · 130
interrupted. Every injected fault is reverted on every path.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from chaoskit import subject as subjects
from chaoskit import workloads
from chaoskit.checks.base import Check
from chaoskit.components.kube_proxy import ProxyModeUnsupported, configured_mode, set_mode
from chaoskit.diagnosers.kit.base import ComponentReport, Diagnosis
from chaoskit.diagnosers.run import diagnose
from chaoskit.engine import FaultResult, default_deadline, run_fault
from chaoskit.env import Env
from chaoskit.errors import EXIT_BREACHED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TOOL, ChaoskitError, UsageError
from chaoskit.faults.base import Fault
from chaoskit.journal import Journal
from chaoskit.measurements.base import Measurement, TargetParams
from chaoskit.model.playbook import ConcurrentStep, FaultStep, Playbook, ScaleUp
from chaoskit.model.score import run_score
from chaoskit.model.thresholds import evaluate
from chaoskit.model.timeline import MeasurementResult
from chaoskit.probes.run import ProbeSet, prober_for
from chaoskit.registry import CHECKS, FAULTS, MEASUREMENTS
from chaoskit.safety import acquire, check_free, holder_id, release
from chaoskit.seams.nodeexec import Node
from chaoskit.seams.poll import poll
from chaoskit.seams.shell import Runner as ShellRunner
from chaoskit.seams.shell import SubprocessRunner

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
    named_s: float | None = None  # injected -> the diagnosis names the fault's component and cause (when diagnosing)
    scaled_up_at: float | None = None  # when the step's scaleUp raised the HPA's minReplicas (wall clock)
    errors: list[str] = field(default_factory=list)  # the system deviated
    failures: list[str] = field(default_factory=list)  # chaoskit could not arm, inject or revert
    weight: float = 1.0  # in the resilience score
    fact_check: dict[str, Any] = field(default_factory=dict)  # FactCheck.to_dict(): each check asked where it says no

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
    subject: str = ""  # the user's objects under test, in words (empty: chaoskit's workload or none)
    probes: list[dict[str, Any]] = field(default_factory=list)  # ProbeRecord.to_dict(): phases judged, samples
    probe_windows: dict[str, Any] = field(default_factory=dict)  # the phases' time windows the probes were judged by
    verdict: Verdict = "passed"
    errors: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        data = {**asdict(self), "exit_code": self.exit_code}
        return {**data, "score": run_score(data)}


def resolve_node(nodes: list[Node], wanted: str | None, default_role: str) -> str:
    """A node name from a target (name, role or "any"); a role picks its first node, by name."""
    names = [n.name for n in nodes]
    if wanted in names:
        return wanted
    role = default_role if wanted in (None, "any") else wanted
    for n in sorted(nodes, key=lambda n: n.name):
        if n.role == role:
            return n.name
    raise UsageError(f"no node {wanted!r} (role {role}) in this cluster; nodes: {', '.join(names)}")


# When the diagnosis first looks at a fault whose effect has not shown yet: about one look's length. A look begun
# before a quick effect (an API server stopping, an etcd outage reaching /readyz) is spent on a cluster that does not
# show it yet, and the look after the effect then comes a whole look later; a slow symptom (a node going NotReady
# after the grace period, a full disk reported as pressure) has its cause named meanwhile.
EARLY_LOOK_S = 10.0


class Peers:
    """The runs of one suite in progress: the nodes each one's faults reach and the faults held at this moment.

    A run's steady state does not judge the nodes another run is breaking, and its diagnosis during a fault looks for
    its own fault past the findings of the others' (both are recorded). Thread-safe: each run has its thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, frozenset[str]] = {}
        self._held: dict[str, tuple[Fault, str]] = {}  # step key -> (fault, node)
        self._diagnoses: list[_Diagnosing] = []  # those under way, and the latest finished

    def join(self, run_id: str, nodes: frozenset[str]) -> None:
        with self._lock:
            self._nodes[run_id] = nodes

    def leave(self, run_id: str) -> None:
        with self._lock:
            self._nodes.pop(run_id, None)

    def excused(self, run_id: str) -> set[str]:
        """Nodes the other runs in progress may be breaking."""
        with self._lock:
            return {n for run, nodes in self._nodes.items() if run != run_id for n in nodes}

    def hold(self, key: str, fault: Fault, node: str) -> None:
        with self._lock:
            self._held[key] = (fault, node)

    def drop(self, key: str) -> None:
        with self._lock:
            self._held.pop(key, None)

    def held_besides(self, key: str) -> list[tuple[Fault, str]]:
        """The faults held now by other steps (of this run or another), with their nodes."""
        with self._lock:
            return [held for k, held in self._held.items() if k != key]

    def diagnosis(self, after: float, collect: Callable[[], Diagnosis | None]) -> tuple[float, Diagnosis | None, bool]:
        """A diagnosis started after `after` (monotonic): another run's if one did (the finished one, else the one
        under way), or one this caller collects now; (when it started, what it found, whether this caller collected
        it). Runs holding faults at the same moment want the same picture of the cluster, and each diagnosis costs
        seconds of the host's CPU (a docker exec or an agent call per component and node, two scrapes of each); each
        run judges it against its own fault. One that started before `after` is of no use, and is not waited for."""
        with self._lock:
            fresh = [d for d in self._diagnoses if d.started > after]
            done = [d for d in fresh if d.done.is_set()]
            mine = not fresh
            if mine:
                ours = _Diagnosing(time.monotonic())
                self._diagnoses.append(ours)
            else:  # the newest finished, else the one under way that finishes first
                ours = max(done, key=lambda d: d.started) if done else min(fresh, key=lambda d: d.started)
        if not mine:
            ours.done.wait()
            return ours.started, ours.found, False
        try:
            ours.found = collect()
        finally:
            ours.done.set()
            with self._lock:
                latest = max((d for d in self._diagnoses if d.done.is_set()), key=lambda d: d.started)
                self._diagnoses = [d for d in self._diagnoses if d is latest or not d.done.is_set()]
        return ours.started, ours.found, True


@dataclass
class _Diagnosing:
    """One diagnosis of a suite: when it started, and what it found once done."""

    started: float
    found: Diagnosis | None = None
    done: threading.Event = field(default_factory=threading.Event)


def names_fault(found: Diagnosis, fault: Fault, node: str, besides: list[tuple[Fault, str]]) -> bool:
    """Whether the diagnosis names `fault` among its most likely causes: once the findings other faults held now explain
    are set aside (reports about their node when node-scoped, their component when wider), a finding of the fault's
    component matching its cause is at the highest severity left. Equally severe findings that nothing held explains
    (a slow etcd on a loaded host) may rank above it, but not a more severe one."""

    def theirs(report: ComponentReport) -> bool:
        return any(report.subject == n if f.scope == "node" else report.component == f.named.component
                   for f, n in besides if (f.named.component, n) != (fault.named.component, node))  # fmt: skip

    kept = Diagnosis(found.cluster, tuple(r for r in found.reports if not theirs(r)), found.collected_at, 0.0)
    top = kept.top_findings()
    return any(f.severity == top[0].severity and f.component == fault.named.component
               and re.search(fault.named.cause, f"{f.title} {f.probable_cause}") for f in top)  # fmt: skip


def diagnose_cluster(env: Env, nodes: list[Node], when: str, say: Callable[[str], None]) -> Diagnosis | None:
    """A diagnosis of every component, said in one line; None when it broke (it must not cost the experiment)."""
    control_plane = next((n.name for n in nodes if n.role == "control-plane"), nodes[0].name)
    try:
        found = diagnose(env, control_plane, [n.name for n in nodes])
    except Exception as exc:  # a broken diagnoser reports, it does not stop a run
        say(f"diagnosis {when} failed: {type(exc).__name__}: {exc}")
        return None
    say(diagnosis_line(when, found))
    return found


def diagnosis_line(when: str, found: Diagnosis) -> str:
    failing = [f"{r.component}@{r.subject}: {r.status}" for r in found.reports if r.status != "ok"]
    return f"diagnosis {when}: {', '.join(failing) or 'every component ok'} ({found.duration_s:.1f}s)"


def fault_for(step: FaultStep) -> Fault:
    fault: Fault = FAULTS.get(step.fault)()  # type: ignore[assignment]
    return fault


def step_deadline(step: FaultStep) -> float:
    """The step's own deadline, or the fault's default (which knows how long its effect may take to show)."""
    return step.deadline if "deadline" in step.model_fields_set else default_deadline(fault_for(step), step.duration)


def plan_steps(pb: Playbook, nodes: list[Node]) -> list[dict[str, Any]]:
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
            **({"scale_up": f"at {step.scale_up.at}: raise {_scaled_hpa(pb)} minReplicas to "
                            f"{step.scale_up.min_replicas} ({_undone(pb)})"} if step.scale_up else {}),
        })  # fmt: skip
    return out


def _scaled_hpa(pb: Playbook) -> str:
    s = pb.spec.subject
    if s is None:
        return f"HPA {pb.spec.namespace}/web"
    if s.hpa:
        return f"HPA {s.namespace}/{s.hpa}"
    what = f"Deployment {s.namespace}/{s.deployment}" if s.deployment else f"StatefulSet {s.namespace}/{s.stateful_set}"
    return f"the HPA of {what}" if s.selector is None else f"the HPA of the Deployment {s.namespace} selects"


def _undone(pb: Playbook) -> str:
    if pb.spec.subject is None:
        return "gone with the namespace after the run"
    return "its minReplicas put back after the run, or by chaoskit revert"


def _check(env: Env, name: str, params: dict[str, Any], timeout: float,
           excused: Callable[[], set[str]] = set) -> CheckRecord:  # fmt: skip
    """A steady-state check, polled until it passes or `timeout`; nodes `excused()` names (another run of the suite
    is breaking them) are left out of the judgement by checks that judge nodes."""
    check: Check = CHECKS.get(name)()  # type: ignore[assignment]
    model_type = CHECKS.params_model(name)
    judges_nodes = "except_nodes" in model_type.model_fields
    last = ["not run"]

    def passes() -> bool:
        given = dict(params)
        if judges_nodes and (others := excused()):
            given["exceptNodes"] = sorted({*given.get("exceptNodes", []), *others})
        outcome = check.run(env, model_type.model_validate(given))
        last[0] = outcome.detail
        return outcome.ok

    took = poll(passes, timeout, 1.0)
    return CheckRecord(name, took.done, last[0], took.seconds if took.done else timeout)


class Runner:
    def __init__(self, env: Env, nodes: list[Node], journal: Journal, say: Callable[[str], None],
                 peers: Peers | None = None, shell: ShellRunner | None = None) -> None:  # fmt: skip
        self.env, self.nodes, self.journal, self.say = env, nodes, journal, say
        self.shell = shell or SubprocessRunner()  # where command probes run
        self.probes: ProbeSet | None = None
        self.peers = peers or Peers()  # alone, nobody else's nodes are excused
        self.stop = threading.Event()
        self.run_id = uuid.uuid4().hex[:8]
        self.subject: subjects.Subject | None = None  # what scaleUp and the measurements aim at
        self.restore_proxy_mode: str | None = None  # kube-proxy's mode before the playbook switched it
        self.diagnose_enabled = False
        self.diagnose_around = True  # before and after the steps too; a suite diagnoses once around all its runs

    def run(self, pb: Playbook) -> RunRecord:
        rec = RunRecord(pb.name, pb.spec.cluster, pb.spec.namespace, str(self.journal.path), self.run_id, time.time())
        self.journal.append(
            "run-started", playbook=pb.name, run_id=self.run_id, cluster=pb.spec.cluster, holder=holder_id(self.run_id)
        )  # whoever reverts it later may run on another host or pod
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
            self._put_back(rec)
            if pb.spec.workload is not None or (pb.spec.subject and pb.spec.subject.load) or pb.spec.probes:
                self._cleanup(pb)
            if self.restore_proxy_mode is not None:
                self._proxy_mode(self.restore_proxy_mode)
            rec.finished_at = time.time()
            self.journal.append("run-finished", verdict=rec.verdict, record=rec.to_dict())
        return rec

    def _run(self, pb: Playbook, rec: RunRecord) -> None:
        # a component another run is breaking: refused now, before anything is deployed or switched
        check_free(self.env.kube, sorted({self._lock_of(s) for s in pb.spec.fault_steps()}), holder_id(self.run_id))
        if pb.spec.kube_proxy_mode is not None:
            self._proxy_mode(pb.spec.kube_proxy_mode)
        if pb.spec.workload is not None:
            self._deploy(pb)
            self.subject = subjects.chaoskits(pb.spec.namespace)
        elif pb.spec.subject is not None:
            self.subject = self._subject(pb, rec)
        self._go_on()
        self._start_probes(pb)
        try:
            self._measured(pb, rec)
        finally:
            if self.probes is not None:
                self._finish_probes(rec)

    def _measured(self, pb: Playbook, rec: RunRecord) -> None:
        rec.before = [self._steady(c.check, c.params, c.timeout, "before") for c in pb.spec.steady_state]
        failed_probes = self.probes.before_ends(self.stop) if self.probes is not None else []
        if not all(c.ok for c in rec.before) or failed_probes:
            rec.verdict = "aborted"
            why = "; ".join(f"probe {p.name}: {p.phases[0].reason}" for p in failed_probes)
            rec.errors.append(f"steady state not met before injecting{': ' + why if why else ''}; nothing was injected")
            return
        self.diagnose_enabled = pb.spec.diagnose
        self._diagnose(rec, "before")
        running = self._start_measurements(pb)
        stopping: Future[dict[str, MeasurementResult]] | None = None
        try:
            for step in pb.spec.steps:
                self._go_on()  # nothing more is injected once the run is told to stop
                group = step.concurrent if isinstance(step, ConcurrentStep) else [step]
                done = self._group(group, rec)
                rec.steps += done
                self._go_on()
                if any(s.failures for s in done):
                    rec.verdict = "error"
                    rec.errors.append("chaoskit could not run a step (see its failures); later steps not run")
                    return
            if self.probes is not None:
                self.probes.after_starts()
            # the measurements wait for a scale-up's last pods while the steady state is checked: both only wait,
            # and after an outage each can take 15-20 s (the leaders' leases, the pods the HPA asked for meanwhile)
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chaoskit-stop") as pool:
                stopping = pool.submit(self._stop_all, running)
                rec.after = [self._steady(c.check, c.params, c.timeout, "after") for c in pb.spec.steady_state]
                self._diagnose(rec, "after")
        finally:
            results = stopping.result() if stopping is not None else self._stop_all(running)
            rec.measurements = [r.to_dict() for r in results.values()]
        breaches = [evaluate(t, results) for t in pb.spec.thresholds]
        rec.thresholds = [b.to_dict() for b in breaches]
        for b in breaches:
            self.say(f"threshold {b.measurement} {b.stat} {b.stage}: {'BREACHED' if b.breached else 'ok'} ({b.reason})")
        if not all(s.ok for s in rec.steps) or not all(c.ok for c in rec.after) or any(b.breached for b in breaches):
            rec.verdict = "deviated"

    def _start_probes(self, pb: Playbook) -> None:
        """The probes sampling from now on (an http probe's pod in chaoskit's namespace); one that cannot start is
        chaoskit's error (exit 4), with nothing injected."""
        if not pb.spec.probes:
            return
        ns = pb.spec.namespace
        if pb.spec.workload is None:  # chaoskit's namespace exists already with its workload
            self._own_namespace(ns)

        def node_of(wanted: str) -> str:
            return resolve_node(self.nodes, wanted, "worker")

        probes = ProbeSet([(p, prober_for(self.env, p, ns, self.shell, node_of)) for p in pb.spec.probes], self.say)
        probes.start()
        self.probes = probes

    def _finish_probes(self, rec: RunRecord) -> None:
        assert self.probes is not None
        done = self.probes.finish(self.stop)
        rec.probes = [p.to_dict() for p in done]
        rec.probe_windows = self.probes.phases.to_dict()
        for p in done:
            self.say(f"probe {p.name}: " + "; ".join(f"{r.phase} {'ok' if r.ok else 'FAILED'} ({r.reason})"
                                                       for r in p.phases))  # fmt: skip
        if rec.verdict == "passed" and not all(p.ok for p in done):
            rec.verdict = "deviated"

    def _go_on(self) -> None:
        """Stop here when told to (Ctrl-C reaches a suite's main thread, which sets `stop` on each run)."""
        if self.stop.is_set():
            raise KeyboardInterrupt

    def _start_measurements(self, pb: Playbook) -> list[Measurement]:
        """Every measurement started before the first fault; one that cannot start aborts the run (none injected)."""
        running: list[Measurement] = []
        try:
            for ref in pb.spec.measurements:
                params = MEASUREMENTS.params_model(ref.type).model_validate(ref.params)
                params = self._aimed(params)
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

    def _stop_all(self, running: list[Measurement]) -> dict[str, MeasurementResult]:
        return {m.label: self._stop(m) for m in running}

    def _stop(self, m: Measurement) -> MeasurementResult:
        t0 = time.monotonic()
        result = m.stop()
        self.say(f"measurement {m.label} stopped ({time.monotonic() - t0:.1f}s)")  # stop() waits for pods on their way
        return result

    def _proxy_mode(self, mode: str) -> None:
        before = configured_mode(self.env.kube)
        try:
            set_mode(self.env.kube, self.env.nodes, mode, say=self.say)
        except ProxyModeUnsupported as exc:
            raise UsageError(f"spec.kubeProxyMode {mode}: {exc}") from exc
        self.restore_proxy_mode = None if mode == self.restore_proxy_mode else before

    def _steady(self, name: str, params: dict[str, Any], timeout: float, when: str) -> CheckRecord:
        record = _check(self.env, name, params, timeout, lambda: self.peers.excused(self.run_id))
        self.say(f"steady state {when}: {name} {'ok' if record.ok else 'FAILED'} ({record.detail})")
        return record

    def _diagnose(self, rec: RunRecord, when: str) -> None:
        """A diagnosis of every component into the run record; never fails the run (it reports, it does not judge)."""
        if not self.diagnose_enabled or not self.diagnose_around:
            return
        found = self._diagnosis(when)
        if found is not None:
            rec.diagnoses.append({"when": when, "step": "", "report": found.to_dict()})

    def _diagnosis(self, when: str) -> Diagnosis | None:
        return diagnose_cluster(self.env, self.nodes, when, self.say)

    def _diagnose_during(self, rec: RunRecord, step: StepRecord, fault: Fault, key: str, until: float,
                         effect: threading.Event, reverting: threading.Event) -> None:  # fmt: skip
        """While the fault holds: diagnose until the top finding names it (past what other faults held now explain), or
        until `until` (monotonic); the last diagnosis goes into the record with how long naming took since the
        injection. The first look starts at the `effect`, or EARLY_LOOK_S after the injection when the effect takes
        longer; a look that did not name the fault and saw the effect come meanwhile is followed by the next at once
        (the symptom is there now). A look that ends once `reverting` is set (the effect never came) records nothing:
        it was not "during" the fault."""
        if not self.diagnose_enabled:
            return
        t0 = time.monotonic()
        effect.wait(EARLY_LOOK_S)
        if reverting.is_set():
            return
        after = time.monotonic()
        when = f"during {step.step or step.fault}"
        while True:
            besides, effect_seen = self.peers.held_besides(key), effect.is_set()
            after, found, mine = self.peers.diagnosis(after, lambda: self._diagnosis(when))
            if found is None or reverting.is_set():
                return
            if not mine:  # another run's, started after this fault was injected (or after the last one looked at)
                self.say(f"{diagnosis_line(when, found)}, shared")
            named = names_fault(found, fault, step.node, besides)
            if named or self.stop.is_set() or time.monotonic() + found.duration_s > until:
                break
            if (effect_seen or not effect.is_set()) and reverting.wait(2):
                return
        step.named_s = time.monotonic() - t0 if named else None
        self.say(f"[{step.step}] diagnosis {'named' if named else 'did NOT name'} {fault.named.component} "
                 f"({fault.named.cause}){f' after {step.named_s:.1f}s' if named else ''}")  # fmt: skip
        rec.diagnoses.append({
            "when": "during", "step": step.step, "fault": fault.name, "node": step.node, "named_s": step.named_s,
            "held_besides": [f"{f.name}@{n}" for f, n in besides], "report": found.to_dict(),
        })  # fmt: skip

    def _group(self, group: list[FaultStep], rec: RunRecord) -> list[StepRecord]:
        """Steps that run together; what each one breaks is locked once for the whole group."""
        seconds = max(s.after + step_deadline(s) for s in group)
        targets = [self._target(s) for s in group]
        locks = []
        try:
            for name in sorted({fault.lock_name(node, params) for fault, node, params in targets}):
                locks.append(acquire(self.env.kube, name, holder_id(self.run_id), seconds))
            if len(group) == 1:
                return [self._step(group[0], targets[0], rec)]
            return self._together(group, targets, rec)
        finally:
            for lock in locks:
                release(self.env.kube, lock)

    def _lock_of(self, step: FaultStep) -> str:
        fault, node, params = self._target(step)
        return fault.lock_name(node, params)

    def _target(self, step: FaultStep) -> tuple[Fault, str, BaseModel]:
        fault = fault_for(step)
        node = resolve_node(self.nodes, step.target.node if step.target else None, fault.target_role)
        return fault, node, FAULTS.params_model(step.fault).model_validate(step.params)

    def _together(self, group: list[FaultStep], targets: list[tuple[Fault, str, BaseModel]],
                  rec: RunRecord) -> list[StepRecord]:  # fmt: skip
        with ThreadPoolExecutor(max_workers=len(group)) as pool:
            futures = [pool.submit(self._step, s, t, rec) for s, t in zip(group, targets, strict=True)]
            try:
                return [f.result() for f in futures]
            except KeyboardInterrupt:
                self.stop.set()  # the threads cut their holds short and revert
                for f in futures:
                    f.result()
                raise

    def _step(self, step: FaultStep, target: tuple[Fault, str, BaseModel], rec: RunRecord) -> StepRecord:
        fault, node, params = target
        srec = StepRecord(step.name, step.fault, node, weight=step.weight)
        if step.after and self.stop.wait(step.after):
            return srec
        key, deadline, started = f"{self.run_id}/{step.name}", step_deadline(step), time.monotonic()
        margin = 30.0  # the revert must start well before the node's own switch fires
        effect, reverting = threading.Event(), threading.Event()
        # the diagnosis runs beside the effect check: a cause often shows long before its symptom (an expired client
        # certificate ~25 s before the node's heartbeat goes stale), and the hold that waits for both then waits for
        # the longer of them, not their sum
        diagnosing = threading.Thread(target=self._diagnose_during, name=f"chaoskit-diagnose-{step.name}", daemon=True,
                                      args=(rec, srec, fault, key, started + max(deadline - margin, step.duration),
                                            effect, reverting))  # fmt: skip

        def during() -> None:
            if self.probes is not None:
                self.probes.holding(key)
            if step.scale_up is not None and step.scale_up.at == "effect":
                self._scale_up(step.scale_up, srec)
            effect.set()  # after the scale-up: a look at the effect sees the HPA asked for pods
            diagnosing.join()  # the hold lasts until the diagnosis has named the fault (or given up)

        self.peers.hold(key, fault, node)  # from before the first apply line: others may see it
        try:
            result: FaultResult = run_fault(
                self.env, fault, node, params, duration=step.duration, deadline=deadline, journal=self.journal,
                say=lambda m: self.say(f"[{step.name}] {m}"), stop=self.stop, on_injected=diagnosing.start,
                on_effect=during, on_revert=reverting.set,
            )  # fmt: skip
        finally:
            # run_fault has set `reverting` (on_revert): a look in flight ends within its budget, unrecorded
            if diagnosing.is_alive():
                diagnosing.join()
            self.peers.drop(key)
            if self.probes is not None:
                self.probes.released(key)
        srec.summary, srec.effect_s, srec.held_s = result.summary, result.effect_s, result.held_s
        srec.recovery_s, srec.fact_check = result.recovery_s, result.fact_check.to_dict()
        srec.errors, srec.failures = [*result.errors, *srec.errors], [*result.failures, *srec.failures]  # + while held
        if step.scale_up is not None and step.scale_up.at == "recovered" and srec.recovery_s is not None:
            self._scale_up(step.scale_up, srec)
        return srec

    def _scale_up(self, scale_up: ScaleUp, srec: StepRecord) -> None:
        """The step's scaleUp: the subject's HPA asked for more pods now (a failure is chaoskit's, not the system's)."""
        try:
            assert self.subject is not None  # the playbook's rules demand a workload or a subject for a scaleUp
            subjects.raise_min_replicas(self.env.kube, self.subject, scale_up.min_replicas, self.journal)
        except ChaoskitError as exc:
            srec.failures.append(f"could not raise the HPA's minReplicas to {scale_up.min_replicas}: {exc}")
            return
        srec.scaled_up_at = time.time()
        self.say(f"[{srec.step}] asked the HPA for {scale_up.min_replicas} pods (minReplicas raised)")

    def _deploy(self, pb: Playbook) -> None:
        w, ns = pb.spec.workload, pb.spec.namespace
        assert w is not None
        kube = self.env.kube
        self._own_namespace(ns)
        for obj in (
            workloads.web_deployment(ns, replicas=w.replicas),
            workloads.service(ns),
            workloads.hpa(ns, min_replicas=w.hpa.min_replicas, max_replicas=w.hpa.max_replicas,
                          cpu_percent=w.hpa.cpu_percent),
        ):  # fmt: skip
            kube.apply(obj)
        kube.wait("the web workload to be ready", lambda: workloads.ready_replicas(self.env.kube, ns) >= 1, 120)
        self.say(f"workload ready in namespace {ns}")
        if not w.load.concurrency:
            return
        time.sleep(w.load.start_after)
        url = f"http://web.{ns}.svc.cluster.local/burn?ms={w.load.burn_ms}"
        kube.apply(workloads.load_generator(ns, url, concurrency=w.load.concurrency))

    def _subject(self, pb: Playbook, rec: RunRecord) -> subjects.Subject:
        """The user's objects, found before anything is injected; their HPA must have room for every scaleUp."""
        assert pb.spec.subject is not None
        found = subjects.resolve(self.env.kube, pb.spec.subject)
        rec.subject = found.words()
        self.say(f"subject: {rec.subject}")
        wanted = [s.scale_up.min_replicas for s in pb.spec.fault_steps() if s.scale_up is not None]
        if wanted:
            low, high = subjects.hpa_bounds(self.env.kube, found)
            if bad := [n for n in wanted if not low < n <= high]:
                raise UsageError(f"scaleUp minReplicas {bad[0]} must be above HPA {found.hpa}'s minReplicas ({low}) "
                                 f"and at most its maxReplicas ({high})")  # fmt: skip
            running = subjects.replicas(self.env.kube, found)
            if running >= min(wanted):  # e.g. still up from an earlier scale-up: the HPA scales down only after 5 min
                raise UsageError(f"scaleUp minReplicas {min(wanted)}: {found.kind} {found.namespace}/{found.name} "
                                 f"runs {running} replicas already, so nothing would scale up; wait for its HPA to "
                                 "scale it down, or ask for more")  # fmt: skip
        if (load := pb.spec.subject.load) is not None:
            self._load(pb.spec.namespace, subjects.service_url(self.env.kube, found.namespace, load), load.concurrency)
        return found

    def _aimed(self, params: BaseModel) -> BaseModel:
        """A measurement's target defaults to the subject's objects (chaoskit's workload: already its defaults)."""
        if self.subject is None or self.subject.ours or not isinstance(params, TargetParams):
            return params
        given, s = params.model_fields_set, self.subject
        update = {
            "namespace": s.namespace,
            "deployment": s.name,
            "kind": s.kind,
            "hpa": s.hpa or "",
            "service": s.service or "",
            "first_request": False,
        }  # fmt: skip  (your Service does not answer with its pod's name)
        return params.model_copy(update={k: v for k, v in update.items() if k not in given})

    def _own_namespace(self, ns: str) -> None:
        """chaoskit's namespace for the run, made once an earlier run's copy is gone (nothing can be created in a
        terminating namespace)."""
        kube = self.env.kube
        kube.wait(f"namespace {ns} of an earlier run to be deleted", lambda: not workloads.terminating(kube, ns), 180)
        kube.apply(workloads.namespace(ns))

    def _load(self, ns: str, url: str, concurrency: int) -> None:
        self._own_namespace(ns)
        self.env.kube.apply(workloads.load_generator(ns, url, concurrency=concurrency))
        self.say(f"load: {concurrency} request loop(s) on {url}")

    def _put_back(self, rec: RunRecord) -> None:
        """What the run changed of the user's objects, as it was (a failure leaves it to `chaoskit revert`)."""
        try:
            for what in subjects.put_back(self.env.kube, self.journal):
                self.say(f"put back: {what}")
        except ChaoskitError as exc:
            rec.errors.append(f"could not put back what the run changed (chaoskit revert retries): {exc}")
            rec.verdict = "error"

    def _cleanup(self, pb: Playbook) -> None:
        try:
            self.env.kube.delete(f"/api/v1/namespaces/{pb.spec.namespace}")
        except ChaoskitError as exc:
            self.say(f"could not delete namespace {pb.spec.namespace}: {exc}")
