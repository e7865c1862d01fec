"""Faults for unit tests whose checks observe something: the fake node's record of the lines it ran.

A fault holds on the fake node from its last apply line until a revert line runs after it, the way a component stays
broken from the injection to the revert: so its checks say no before the injection and while it holds, as a real
component's do, and the engine's fact check can be tested against them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from chaoskit.env import Env
from chaoskit.faults.base import Fault, FaultPlan
from chaoskit.journal import Journal
from chaoskit.playbook import parse_playbook
from chaoskit.registry import CATALOG
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec, Node

if TYPE_CHECKING:
    from chaoskit.model.record import RunRecord


def holds(env: Env, plan: FaultPlan) -> bool:
    """The plan's last apply line ran on its node, and none of its revert lines since."""
    assert isinstance(env.nodes, FakeNodeExec), "fake faults run on the fake node exec"
    ran = [c[-1] for c in env.nodes.calls if c[0] == plan.node.name]
    applied = max((i for i, line in enumerate(ran) if plan.apply and line == plan.apply[-1]), default=-1)
    reverted = max((i for i, line in enumerate(ran) if line in plan.revert), default=-1)
    return applied > reverted


def run_one_step(tmp_path: Path, fault: type[Fault], nodes: list[Node], spec: str = "") -> RunRecord:
    """A playbook of one 100 ms step of `fault`, registered for this run only, run on the fakes to its record."""
    from chaoskit.run.plan import plan  # the planner and the runner import the catalog: only when a test runs one
    from chaoskit.runner import Runner

    catalog = CATALOG.extended(faults=[(fault.name, fault)])
    text = f"kind: Playbook\napiVersion: chaoskit.dev/v1alpha1\nmetadata: {{name: p}}\nspec:\n{spec}  steps:\n"
    text += f"    - {{fault: {fault.name}, duration: 100ms}}\n"
    pb = parse_playbook(text, faults=catalog.faults, checks=catalog.checks, measurements=catalog.measurements)
    env = Env(FakeKube(), FakeNodeExec(), "chaoskit")
    return Runner(env, nodes, Journal(tmp_path / "j.jsonl"), lambda _: None).run(plan(pb, nodes, catalog))
