"""Running a playbook: recognise the cluster → set the stage (chaoskit's workload or the user's subject) → steady
state before → the steps (each one locked, journaled, armed, injected, held, reverted) → steady state after →
verdict.

Exit codes, one meaning each: 0 passed · 1 deviated (the system: an effect not seen, no recovery, steady state or
threshold lost) · 4 chaoskit could not do its job (aborted before injecting, arm/inject/revert failed) · 130
interrupted. Every injected fault is reverted on every path. The parts it sequences live in `chaoskit.run`.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from chaoskit.cluster.kwok.converge import converge, simulated_names
from chaoskit.components.kube_proxy import ProxyModeUnsupported, configured_mode, set_mode
from chaoskit.env import Env
from chaoskit.errors import ChaoskitError, UsageError
from chaoskit.events import Emit, SteadyState, Threshold, ignore, said, tapped
from chaoskit.journal import Journal
from chaoskit.model.record import CheckRecord, RunRecord
from chaoskit.model.thresholds import evaluate
from chaoskit.model.timeline import MeasurementResult
from chaoskit.probes.run import ProbeSet
from chaoskit.run.during import Diagnostician
from chaoskit.run.measuring import start_measurements, stop_measurements
from chaoskit.run.peers import Peers
from chaoskit.run.plan import PlannedCheck, RunPlan
from chaoskit.run.probing import finish_probes, start_probes
from chaoskit.run.stage import Stage
from chaoskit.run.steady import steady_check
from chaoskit.run.steps import StepRunner
from chaoskit.safety import check_free, holder_id
from chaoskit.seams.nodeexec import Node
from chaoskit.seams.shell import Runner as ShellRunner
from chaoskit.seams.shell import SubprocessRunner
from chaoskit.subject import Subject


class Runner:
    """One planned run of a playbook, in sequence."""

    def __init__(
        self,
        env: Env,
        nodes: list[Node],
        journal: Journal,
        emit: Emit,
        peers: Peers | None = None,
        shell: ShellRunner | None = None,
        simulate: Callable[[int], object] | None = None,
    ) -> None:
        self.env, self.nodes, self.journal, self.emit = env, nodes, journal, tapped(emit) if emit is ignore else emit
        self.say = said(self.emit)  # what is worth a line and no event of its own
        self.shell = shell or SubprocessRunner()  # where command probes run
        self.probes: ProbeSet | None = None
        self.peers = peers or Peers()  # alone, nobody else's nodes are excused
        self.stop = threading.Event()
        self.run_id = uuid.uuid4().hex[:8]
        self.stage = Stage(env, journal, self.emit, nodes=list(nodes))
        self.restore_proxy_mode: str | None = None  # kube-proxy's mode before the playbook switched it
        # spec.simulatedNodes: through the API only by default (kwok's image already in the cluster, as in the
        # operator); the command line builds and loads the image into a kind cluster first
        self.simulate = simulate or (lambda n: converge(env.kube, n, say=self.say))
        self.restore_simulated: int | None = None  # simulated nodes before the playbook changed their number
        self.diagnostician = Diagnostician(env, nodes, self.emit, self.peers, self._users_subject)
        self.diagnose_around = True  # before and after the steps too; a suite diagnoses once around all its runs

    def run(self, run: RunPlan) -> RunRecord:
        rec = RunRecord(run.name, run.cluster, run.namespace, str(self.journal.path), self.run_id, time.time())
        self.journal.append(
            "run-started", playbook=run.name, run_id=self.run_id, cluster=run.cluster, holder=holder_id(self.run_id)
        )  # whoever reverts it later may run on another host or pod
        try:
            self._run(run, rec)
        except KeyboardInterrupt:
            self.stop.set()
            rec.settle("interrupted")
            rec.errors.append("interrupted; every injected fault was reverted")
        except ChaoskitError as exc:
            rec.settle("error")
            rec.errors.append(str(exc))
        finally:
            self.stage.put_back(rec)
            if run.owns_namespace:
                self.stage.clean_up(run.namespace)
            if self.restore_proxy_mode is not None:
                self._proxy_mode(self.restore_proxy_mode)
            if self.restore_simulated is not None:
                self._simulated(self.restore_simulated)
            rec.finished_at = time.time()
            self.journal.append("run-finished", verdict=rec.verdict, record=rec.to_dict())
        return rec

    def _run(self, run: RunPlan, rec: RunRecord) -> None:
        # a component another run is breaking: refused now, before anything is deployed or switched
        check_free(self.env.kube, run.locks, holder_id(self.run_id))
        if run.changes.kube_proxy_mode is not None:
            self._proxy_mode(run.changes.kube_proxy_mode)
        if run.changes.simulated_nodes is not None:
            self._simulated(run.changes.simulated_nodes)
        self.stage.set_up(run.stage, rec)
        if run.stage.scale_ups:
            self.stage.able_to_scale()
        self._go_on()
        if run.probes:
            if run.stage.workload is None:  # chaoskit's namespace exists already with its workload
                self.stage.own_namespace(run.namespace)
            self.probes = start_probes(self.env, run.probes, run.namespace, self.shell, self.say)
        try:
            self._measured(run, rec)
        finally:
            if self.probes is not None:
                finish_probes(self.probes, self.stop, rec, self.say)

    def _measured(self, run: RunPlan, rec: RunRecord) -> None:
        rec.before = [self._steady(c, "before") for c in run.steady_state]
        failed_probes = self.probes.before_ends(self.stop) if self.probes is not None else []
        if not all(c.ok for c in rec.before) or failed_probes:
            rec.settle("aborted")
            why = "; ".join(f"probe {p.name}: {p.phases[0].reason}" for p in failed_probes)
            rec.errors.append(f"steady state not met before injecting{': ' + why if why else ''}; nothing was injected")
            return
        diagnostician = self.diagnostician if run.diagnose else None
        self._diagnose(rec, "before", diagnostician)
        running = start_measurements(self.env, run.measurements, run.namespace, self.stage.aimed, self.say)
        steps = StepRunner(
            self.env,
            self.journal,
            self.emit,
            self.stop,
            self.run_id,
            self.peers,
            self.stage,
            diagnostician,
            self.probes,
        )
        stopping: Future[dict[str, MeasurementResult]] | None = None
        try:
            for group in run.groups:
                self._go_on()  # nothing more is injected once the run is told to stop
                done = steps.group(group, rec)
                rec.steps += done
                self._go_on()
                if any(s.failures for s in done):
                    rec.settle("error")
                    rec.errors.append("chaoskit could not run a step (see its failures); later steps not run")
                    return
            if self.probes is not None:
                self.probes.after_starts()
            # the measurements wait for a scale-up's last pods while the steady state is checked: both only wait,
            # and after an outage each can take 15-20 s (the leaders' leases, the pods the HPA asked for meanwhile)
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chaoskit-stop") as pool:
                stopping = pool.submit(stop_measurements, running, self.say)
                rec.after = [self._steady(c, "after") for c in run.steady_state]
                self._diagnose(rec, "after", diagnostician)
        finally:
            results = stopping.result() if stopping is not None else stop_measurements(running, self.say)
            rec.measurements = list(results.values())
        breaches = [evaluate(t, results) for t in run.thresholds]
        rec.thresholds = breaches
        for b in breaches:
            self.emit(Threshold(b.measurement, b.stat, b.stage, b.breached, b.reason))
        if not all(s.held for s in rec.steps) or not all(c.ok for c in rec.after) or any(b.breached for b in breaches):
            rec.settle("deviated")

    def _go_on(self) -> None:
        """Stop here when told to (Ctrl-C reaches a suite's main thread, which sets `stop` on each run)."""
        if self.stop.is_set():
            raise KeyboardInterrupt

    def _proxy_mode(self, mode: str) -> None:
        before = configured_mode(self.env.kube)
        try:
            set_mode(self.env.kube, self.env.nodes, mode, say=self.say)
        except ProxyModeUnsupported as exc:
            raise UsageError(f"spec.kubeProxyMode {mode}: {exc}") from exc
        self.restore_proxy_mode = None if mode == self.restore_proxy_mode else before

    def _simulated(self, count: int) -> None:
        before = len(simulated_names(self.env.kube))
        self.say(f"{count} simulated node(s) (kwok) in the cluster, {before} before")
        self.simulate(count)
        self.restore_simulated = None if count in (before, self.restore_simulated) else before

    def _steady(self, check: PlannedCheck, when: str) -> CheckRecord:
        record = steady_check(self.env, check, self._excused)
        self.emit(SteadyState(when, check.name, record.ok, record.detail))
        return record

    def _excused(self) -> set[str]:
        return self.peers.excused(self.run_id)  # read at each poll: the suite's runs come and go

    def _users_subject(self) -> Subject | None:
        """Your subject, judged beside the components (chaoskit's own workload is not the system under test)."""
        found = self.stage.subject
        return None if found is None or found.ours else found

    def _diagnose(self, rec: RunRecord, when: str, diagnostician: Diagnostician | None) -> None:
        """A diagnosis of every component into the run record; never fails the run (it reports, it does not judge)."""
        if diagnostician is None or not self.diagnose_around:
            return
        found = diagnostician.look(when)
        if found is not None:
            rec.diagnoses.append({"when": when, "step": "", "report": found.to_dict()})
