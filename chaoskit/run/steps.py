"""A run's fault steps as the engine plays them: what a group breaks locked once for the group, its steps run
together, each held while the diagnosis looks, scaled up when the playbook says, and recorded."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from chaoskit.engine import FaultResult, run_fault
from chaoskit.env import Env
from chaoskit.events import Emit
from chaoskit.journal import Journal
from chaoskit.model.record import RunRecord, StepRecord
from chaoskit.probes.run import ProbeSet
from chaoskit.run.during import Diagnostician, Held
from chaoskit.run.peers import Peers
from chaoskit.run.stage import Stage
from chaoskit.safety import acquire, holder_id, release
from chaoskit.step import ResolvedStep

REVERT_MARGIN_S = 30.0  # the revert must start well before the node's own switch fires


@dataclass
class StepRunner:
    """Plays a run's resolved steps; `diagnostician` is None when the playbook does not diagnose."""

    env: Env
    journal: Journal
    emit: Emit
    stop: threading.Event
    run_id: str
    peers: Peers
    stage: Stage
    diagnostician: Diagnostician | None = None
    probes: ProbeSet | None = None

    def group(self, group: Sequence[ResolvedStep], rec: RunRecord) -> list[StepRecord]:
        """Steps that run together; what each one breaks is locked once for the whole group."""
        seconds = max(s.after + s.deadline for s in group)
        locks = []
        try:
            for name in sorted({s.lock for s in group}):
                locks.append(acquire(self.env.kube, name, holder_id(self.run_id), seconds))
            if len(group) == 1:
                return [self.step(group[0], rec)]
            return self._together(group, rec)
        finally:
            for lock in locks:
                release(self.env.kube, lock)

    def _together(self, group: Sequence[ResolvedStep], rec: RunRecord) -> list[StepRecord]:
        with ThreadPoolExecutor(max_workers=len(group)) as pool:
            futures = [pool.submit(self.step, s, rec) for s in group]
            try:
                return [f.result() for f in futures]
            except KeyboardInterrupt:
                self.stop.set()  # the threads cut their holds short and revert
                for f in futures:
                    f.result()
                raise

    def step(self, step: ResolvedStep, rec: RunRecord) -> StepRecord:
        srec = StepRecord.of(step)  # what the hold writes into: its scale-up, the diagnosis naming it
        if step.after and self.stop.wait(step.after):
            return srec
        key, started = f"{self.run_id}/{step.name}", time.monotonic()
        until = started + max(step.deadline - REVERT_MARGIN_S, step.duration)
        held = Held(srec, step.fault, key, until, threading.Event(), threading.Event())
        # the diagnosis runs beside the effect check: a cause often shows long before its symptom (an expired client
        # certificate ~25 s before the node's heartbeat goes stale), and the hold that waits for both then waits for
        # the longer of them, not their sum
        diagnosing = threading.Thread(
            target=self._diagnose, args=(rec, held), name=f"chaoskit-diagnose-{step.name}", daemon=True
        )

        def during() -> None:
            if self.probes is not None:
                self.probes.holding(key)
            if step.scale_up is not None and step.scale_up.at == "effect":
                self.stage.scale_up(step.scale_up, srec)
            held.effect.set()  # after the scale-up: a look at the effect sees the HPA asked for pods
            diagnosing.join()  # the hold lasts until the diagnosis has named the fault (or given up)

        def injected() -> None:
            srec.injected_at = time.time()  # wall clock: where the report draws the fault on the run's timelines
            diagnosing.start()

        def reverting() -> None:
            srec.reverted_at = time.time()
            held.reverting.set()

        self.peers.hold(key, step.fault, step.node.name)  # from before the first apply line: others may see it
        try:
            result: FaultResult = run_fault(
                self.env,
                step,
                journal=self.journal,
                emit=self.emit,
                stop=self.stop,
                on_injected=injected,
                on_effect=during,
                on_revert=reverting,
            )
        finally:
            # run_fault has set `reverting` (on_revert): a look in flight ends within its budget, unrecorded
            if diagnosing.is_alive():
                diagnosing.join()
            self.peers.drop(key)
            if self.probes is not None:
                self.probes.released(key)
        srec = StepRecord.of(step, result, while_held=srec)
        if step.scale_up is not None and step.scale_up.at == "recovered" and srec.recovery_s is not None:
            self.stage.scale_up(step.scale_up, srec)
        return srec

    def _diagnose(self, rec: RunRecord, held: Held) -> None:
        if self.diagnostician is not None:
            self.diagnostician.during(rec, held, self.stop)
