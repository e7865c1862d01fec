"""Sabotage: a fault injected with its undo lines removed (`FaultPlan.undo_removed`, the mirror of the no-op control's
apply removed) cannot be reverted, and chaoskit must not say it was: its verify lines fail on the node, chaoskit exits
4 saying "not reverted", the journal keeps the injection open for `chaoskit revert` and the node's dead-man switch
stays armed. Then the undo is put back in the journal and `chaoskit revert` heals it.

Every fault of the catalog, with its default params. That a verify line fails while its fault holds is also asked
in every run (the fact check's "held: reverted?", which must say no); here the whole fail-closed path around it is
proven fault by fault on the real components. Faults that cannot meet run side by side (`Radius.meets`); each group
starts from a healthy cluster."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from chaoskit.deadman import armed, line_argv
from chaoskit.env import Env
from chaoskit.errors import ChaoskitError
from chaoskit.faults.base import Fault, FaultPlan, Radius
from chaoskit.journal import Journal
from chaoskit.registry import FAULTS, load_catalog
from chaoskit.seams.kube import Kube
from chaoskit.seams.nodeexec import DockerNodeExec, named
from chaoskit.seams.shell import SubprocessRunner
from tests.e2e.conftest import CLUSTER, chaoskit, finished
from tests.e2e.test_faults import wait_healthy

load_catalog()
NODES = DockerNodeExec(SubprocessRunner())
NOT_HOLDING_S = 180.0  # what a group before it left healing (an APIService's availability) is back by then
RUN_TIMEOUT = 900.0  # the longest effect timeout (300 s), a one-second hold, a revert's waits
SABOTAGED = tuple(FAULTS.names())


@dataclass(frozen=True)
class Sabotage:
    """One fault of the catalog, with its default params, on the node it is injected on."""

    fault: Fault
    node: str

    @property
    def radius(self) -> Radius:
        return self.fault.radius(named(self.node), self.fault.Params())

    def plan(self) -> FaultPlan:
        """The fault's real plan: what `chaoskit revert` is given back."""
        return self.fault.plan(named(self.node), self.fault.Params())


def groups(cluster: str) -> list[list[Sabotage]]:
    """The catalog in groups of faults that meet none of the others (the first group each fits, on the first node
    that lets it), so a group's faults run side by side."""
    workers = [f"{cluster}-worker", f"{cluster}-worker2"]
    placed: list[list[Sabotage]] = []
    for name in SABOTAGED:
        fault: Fault = FAULTS.get(name)()  # type: ignore[assignment]
        where = [
            Sabotage(fault, n) for n in (workers if fault.target_role == "worker" else [f"{cluster}-control-plane"])
        ]
        fits = ((g, s) for g in placed for s in where if not any(s.radius.meets(o.radius) for o in g))
        group, sabotage = next(fits, (None, where[0]))
        if group is None:
            placed.append([sabotage])
        else:
            group.append(sabotage)
    return placed


GROUPS = groups(CLUSTER)


def _holds(s: Sabotage, env: Env) -> bool:
    """The fault's effect check on the cluster as it is (a check whose probe setup makes reads nothing: no)."""
    try:
        return s.fault.took_effect(env, s.plan())
    except ChaoskitError:
        return False  # the run's own fact check asks it properly, after its setup


def _injected(s: Sabotage, cluster: str, journal: Path) -> subprocess.Popen[str]:
    """`chaoskit inject` of the fault with its undo lines removed, held a second."""
    argv = [sys.executable, "-m", "tests.e2e.sabotaged", "inject", s.fault.name, "--cluster", cluster]
    argv += ["--node", s.node, "--duration", "1", "--journal", str(journal), "-o", "json"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _not_reverted(s: Sabotage, proc: subprocess.Popen[str], journal: Path) -> str:
    """What the sabotaged run got wrong, "" when it failed closed: exit 4 "not reverted", its verify lines failing on
    the node, its injection open in the journal and its switch armed."""
    out, err = finished(proc, RUN_TIMEOUT)
    name = s.fault.name
    if proc.returncode != 4 or "not reverted" not in out:
        return f"{name}: exit {proc.returncode}, not 4 with 'not reverted'\n{out[-1500:]}\n{err[-1500:]}"
    pending = Journal(journal).pending()
    if len(pending) != 1:
        return f"{name}: {len(pending)} injection(s) left open in the journal, not 1"
    (inj,) = pending
    if inj.revert != s.plan().verify:
        return f"{name}: journaled {inj.revert}, not its verify lines alone"
    if inj.id not in armed(NODES, named(s.node)):
        return f"{name}: the dead-man switch of {inj.id} is not armed on {s.node}"
    said = [NODES.run(named(s.node), line_argv(line), check=False) for line in s.plan().verify]
    if all(d.returncode == 0 for d in said):
        return f"{name}: every verify line passed with nothing undone"
    return ""


def _healed(s: Sabotage, cluster: str, journal: Path) -> str:
    """The undo put back into the journal (the injection journaled again, with its real revert), then `chaoskit revert`;
    what went wrong, "" when it healed and disarmed the switch."""
    (inj,) = Journal(journal).pending()
    real = s.plan()
    Journal(journal).injection(dataclasses.replace(inj, revert=real.revert, verify=real.verify))
    done = chaoskit("revert", str(journal), "--cluster", cluster, timeout=RUN_TIMEOUT)
    if done.returncode != 0 or "reverted 1 injection(s)" not in done.stdout:
        return f"{s.fault.name}: chaoskit revert exit {done.returncode}\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}"
    if Journal(journal).pending() or inj.id in armed(NODES, named(s.node)):
        return f"{s.fault.name}: healed, yet still open in the journal or armed on {s.node}"
    return ""


@pytest.mark.parametrize("group", GROUPS, ids=["+".join(s.fault.name for s in g) for g in GROUPS])
def test_a_fault_with_its_undo_removed_is_not_reverted_and_chaoskit_revert_heals_it(
    group: list[Sabotage], cluster: str, kube: Kube, tmp_path: Path
) -> None:
    env = Env.for_kind(kube, cluster)
    wait_healthy(env)  # each group starts from a healthy cluster, where its faults' effect checks say no
    for s in group:  # (the metrics API is back a while after the kubelets of the group before it)
        kube.wait(f"{s.fault.name}'s effect check to say no", lambda s=s: not _holds(s, env), NOT_HOLDING_S, 2)
    journals = {s.fault.name: tmp_path / f"{s.fault.name}.jsonl" for s in group}
    runs = [(s, _injected(s, cluster, journals[s.fault.name])) for s in group]
    problems = [_not_reverted(s, proc, journals[s.fault.name]) for s, proc in runs]
    for s in group:  # healed whatever happened above: nothing is left broken for the next group
        if Journal(journals[s.fault.name]).pending():
            problems.append(_healed(s, cluster, journals[s.fault.name]))
    problems = [p for p in problems if p]
    assert not problems, "\n\n".join(problems)
    wait_healthy(env)
    print(f"\nsabotaged and healed: {', '.join(f'{s.fault.name} on {s.node}' for s in group)}")
