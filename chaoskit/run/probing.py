"""The playbook's probes: sampling from before the steady state to after it, judged per phase (before, during,
after, effect); one that cannot start is chaoskit's error (exit 4), with nothing injected."""

from __future__ import annotations

import threading
from collections.abc import Callable

from chaoskit.env import Env
from chaoskit.model.playbook import Playbook
from chaoskit.model.record import RunRecord
from chaoskit.probes.run import ProbeSet, prober_for
from chaoskit.seams.nodeexec import Node, pick
from chaoskit.seams.shell import Runner as ShellRunner


def start_probes(env: Env, pb: Playbook, nodes: list[Node], shell: ShellRunner, say: Callable[[str], None]) -> ProbeSet:
    """The probes sampling from now on (an http probe's pod in chaoskit's namespace, which must exist)."""

    def node_of(wanted: str) -> str:
        return pick(nodes, wanted, "worker").name

    ns = pb.spec.namespace
    probes = ProbeSet([(p, prober_for(env, p, ns, shell, node_of)) for p in pb.spec.probes], say)
    probes.start()
    return probes


def finish_probes(probes: ProbeSet, stop: threading.Event, rec: RunRecord, say: Callable[[str], None]) -> None:
    """Every probe stopped and judged into the record; one that failed a phase deviates a run that passed."""
    done = probes.finish(stop)
    rec.probes = done
    rec.probe_windows = probes.phases.to_dict()
    for p in done:
        say(f"probe {p.name}: " + "; ".join(f"{r.phase} {'ok' if r.ok else 'FAILED'} ({r.reason})" for r in p.phases))
    if not all(p.ok for p in done):
        rec.settle("deviated")
