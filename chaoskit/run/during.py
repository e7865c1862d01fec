"""The diagnosis around a run and while each fault holds: looks until the top finding names the fault (past what
the other faults held at that moment explain), shared between the runs of a suite that look at the same time."""

from __future__ import annotations

import dataclasses
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from chaoskit.diagnosers.kit.base import SEVERITY_ORDER, ComponentReport, Diagnosis
from chaoskit.diagnosers.kit.managed import control_plane_of
from chaoskit.diagnosers.run import diagnose
from chaoskit.env import Env
from chaoskit.events import Diagnosed, Emit
from chaoskit.faults.base import Fault
from chaoskit.model.record import RunRecord, StepRecord
from chaoskit.run.peers import Peers
from chaoskit.seams.nodeexec import Node
from chaoskit.subject import Subject

# When the diagnosis first looks at a fault whose effect has not shown yet: about one look's length. A look begun
# before a quick effect (an API server stopping, an etcd outage reaching /readyz) is spent on a cluster that does not
# show it yet, and the look after the effect then comes a whole look later; a slow symptom (a node going NotReady
# after the grace period, a full disk reported as pressure) has its cause named meanwhile.
EARLY_LOOK_S = 10.0


def names_fault(found: Diagnosis, fault: Fault, node: str, besides: list[tuple[Fault, str]]) -> bool:
    """Whether the diagnosis names `fault` among its most likely causes: once the findings other faults held now explain
    are set aside (reports about their node when node-scoped, their component when wider), a finding of the fault's
    component matching its cause is at the highest severity left. Equally severe findings that nothing held explains
    (a slow etcd on a loaded host) may rank above it, but not a more severe one."""

    def theirs(report: ComponentReport) -> bool:
        return any(
            report.subject == n if f.scope == "node" else report.component == f.named.component
            for f, n in besides
            if (f.named.component, n) != (fault.named.component, node)
        )

    kept = Diagnosis(found.cluster, tuple(r for r in found.reports if not theirs(r)), found.collected_at, 0.0)
    top = kept.top_findings()
    highest = min((SEVERITY_ORDER[f.severity] for f in top), default=0)
    return any(
        SEVERITY_ORDER[f.severity] == highest
        and f.component == fault.named.component
        and re.search(fault.named.cause, f"{f.title} {f.probable_cause}")
        for f in top
    )


def diagnose_cluster(
    env: Env, nodes: list[Node], when: str, emit: Emit, subject: Subject | None = None
) -> Diagnosis | None:
    """A diagnosis of every component (and of your subject, when the run has one), said in one line; None when it
    broke (it must not cost the experiment)."""
    try:
        control_plane, out_of_reach = control_plane_of(env.kube, nodes)  # a managed one is read through the API
        found = diagnose(env, control_plane, [n.name for n in nodes], subject=subject, out_of_reach=out_of_reach)
    except Exception as exc:  # a broken diagnoser reports, it does not stop a run
        emit(Diagnosed(when, error=f"{type(exc).__name__}: {exc}"))
        return None
    emit(diagnosed(when, found))
    return found


def diagnosed(when: str, found: Diagnosis) -> Diagnosed:
    failing = tuple(f"{r.component}@{r.subject}: {r.status}" for r in found.reports if r.status != "ok")
    return Diagnosed(when, failing, found.duration_s)


@dataclass(frozen=True)
class Held:
    """A fault while it holds, as the diagnosis during it needs to know it."""

    step: StepRecord
    fault: Fault
    key: str  # the step's key among the suite's peers
    until: float  # monotonic: no look starts that would end after this
    effect: threading.Event  # set once the effect is seen
    reverting: threading.Event  # set once the revert starts: a look ending after it is not "during" the fault


@dataclass(frozen=True)
class Diagnostician:
    """Who looks at the cluster for a run: its seams, its nodes, where it speaks, and the suite's peers."""

    env: Env
    nodes: list[Node]
    emit: Emit
    peers: Peers
    subject: Callable[[], Subject | None] = lambda: None  # your subject once the run found it (never chaoskit's)

    def look(self, when: str) -> Diagnosis | None:
        return diagnose_cluster(self.env, self.nodes, when, self.emit, self.subject())

    def during(self, rec: RunRecord, held: Held, stop: threading.Event) -> None:
        """While the fault holds: diagnose until the top finding names it (past what other faults held now explain),
        or until `held.until`; the last diagnosis goes into the record with how long naming took since the
        injection, and every look in a line (`looks`). The first look starts at the effect, or EARLY_LOOK_S after
        the injection when the effect takes longer; a look that did not name the fault and saw the effect come
        meanwhile is followed by the next at once (the symptom is there now). A look that ends once the revert
        started (the effect never came) records nothing: it was not "during" the fault."""
        t0, step, effect, reverting = time.monotonic(), held.step, held.effect, held.reverting
        effect.wait(EARLY_LOOK_S)
        if reverting.is_set():
            return
        after = time.monotonic()
        when = f"during {step.step or step.fault}"
        looks: list[dict[str, object]] = []  # every look while it held, in a line each: which named it, and when
        while True:
            besides, effect_seen = self.peers.held_besides(held.key), effect.is_set()
            after, found, mine = self.peers.diagnosis(after, lambda: self.look(when))
            if found is None or reverting.is_set():
                return
            if not mine:  # another run's, started after this fault was injected (or after the last one looked at)
                self.emit(dataclasses.replace(diagnosed(when, found), shared=True))
            named = names_fault(found, held.fault, step.node, besides)
            looks.append(
                {
                    "after_s": round(time.monotonic() - t0, 1),
                    "named": named,
                    "status": found.status,
                    "summary": found.summary(),
                }
            )
            if named or stop.is_set() or time.monotonic() + found.duration_s > held.until:
                break
            if (effect_seen or not effect.is_set()) and reverting.wait(2):
                return
        step.named_s = time.monotonic() - t0 if named else None
        fault = held.fault
        self.emit(
            Diagnosed(
                when,
                named=named,
                component=fault.named.component,
                cause=fault.named.cause,
                named_after_s=step.named_s,
                step=step.step,
            )
        )
        rec.diagnoses.append(
            {
                "when": "during",
                "step": step.step,
                "fault": fault.name,
                "node": step.node,
                "named_s": step.named_s,
                "held_besides": [f"{f.name}@{n}" for f, n in besides],
                "looks": looks,  # the report is the last look's: the first that named the fault, if one did
                "report": found.to_dict(),
            }
        )
