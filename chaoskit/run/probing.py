"""The playbook's probes: sampling from before the steady state to after it, judged per phase (before, during,
after, effect); one that cannot start is chaoskit's error (exit 4), with nothing injected."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from chaoskit.env import Env
from chaoskit.model.record import RunRecord
from chaoskit.probes.base import Prober
from chaoskit.probes.run import ProbeSet, prober_for
from chaoskit.run.plan import PlannedProbe
from chaoskit.seams.shell import Runner as ShellRunner


def start_probes(
    env: Env, planned: Sequence[PlannedProbe], namespace: str, shell: ShellRunner, say: Callable[[str], None]
) -> ProbeSet:
    """The probes sampling from now on (an http probe's pod in chaoskit's `namespace`, which must exist)."""
    probes = ProbeSet([(p.probe, _prober(env, p, namespace, shell)) for p in planned], say)
    probes.start()
    return probes


def _prober(env: Env, planned: PlannedProbe, namespace: str, shell: ShellRunner) -> Prober:
    node = planned.node or ""  # asked only of an http probe that names a node, which the plan resolved
    return prober_for(env, planned.probe, namespace, shell, lambda _: node)


def finish_probes(probes: ProbeSet, stop: threading.Event, rec: RunRecord, say: Callable[[str], None]) -> None:
    """Every probe stopped and judged into the record; one that failed a phase deviates a run that passed."""
    done = probes.finish(stop)
    rec.probes = done
    rec.probe_windows = probes.phases.to_dict()
    for p in done:
        say(f"probe {p.name}: " + "; ".join(f"{r.phase} {'ok' if r.ok else 'FAILED'} ({r.reason})" for r in p.phases))
    if not all(p.ok for p in done):
        rec.settle("deviated")
