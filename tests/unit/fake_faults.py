"""Faults for unit tests whose checks observe something: the fake node's record of the lines it ran.

A fault holds on the fake node from its last apply line until a revert line runs after it, the way a component stays
broken from the injection to the revert: so its checks say no before the injection and while it holds, as a real
component's do, and the engine's fact check can be tested against them.
"""

from __future__ import annotations

from chaoskit.cluster.nodeexec import FakeNodeExec
from chaoskit.env import Env
from chaoskit.faults.base import FaultPlan


def holds(env: Env, plan: FaultPlan) -> bool:
    """The plan's last apply line ran on its node, and none of its revert lines since."""
    assert isinstance(env.nodes, FakeNodeExec), "fake faults run on the fake node exec"
    ran = [c[-1] for c in env.nodes.calls if c[0] == plan.node]
    applied = max((i for i, line in enumerate(ran) if plan.apply and line == plan.apply[-1]), default=-1)
    reverted = max((i for i, line in enumerate(ran) if line in plan.revert), default=-1)
    return applied > reverted
