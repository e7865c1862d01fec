"""A fault step resolved once against the cluster: the fault, the node it lands on, its typed params, its lock,
radius and deadline.

A playbook's steps are resolved here, once, when its run is planned (chaoskit.run.plan); the suite's overlap rules,
the locks, the dry run and the engine all read the same `ResolvedStep`, so a role becomes a node and raw params become
a model in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from pydantic import BaseModel

from chaoskit.faults.base import Fault, FaultPlan, Radius
from chaoskit.model.playbook import ConcurrentStep, FaultStep, ScaleUp
from chaoskit.registry import FAULTS, Registered, Registry
from chaoskit.seams.nodeexec import Node, pick

# The switch fires this long after the planned revert at the latest, unless the playbook says otherwise.
DEFAULT_DEADLINE_MARGIN = 60.0


def default_deadline(fault: Fault, duration: float) -> float:
    """When the switch fires unless told: past the hold and past the longest wait for the effect (chaoskit may
    still be waiting for it when the hold is short), by a margin."""
    return max(duration, fault.effect_timeout) + DEFAULT_DEADLINE_MARGIN


@dataclass(frozen=True)
class ResolvedStep:
    """One fault step as it will run: everything the engine, the locks and the dry run need, decided."""

    name: str
    fault: Fault
    node: Node
    params: BaseModel  # the fault's Params model, with any node it names pinned
    duration: float  # the hold
    deadline: float  # seconds after the injection when the node's dead-man switch heals it
    after: float = 0.0  # seconds after the step's turn comes before it is injected
    weight: float = 1.0  # in the resilience score
    scale_up: ScaleUp | None = None
    nodes: tuple[Node, ...] = ()  # the cluster's nodes it was resolved against: where a handoff is made

    @cached_property
    def plan(self) -> FaultPlan:
        return self.fault.plan(self.node, self.params)

    @property
    def lock(self) -> str:
        return self.fault.lock_name(self.node, self.params)

    @property
    def radius(self) -> Radius:
        return self.fault.radius(self.node, self.params)


def resolve(
    fault: Fault,
    params: BaseModel,
    nodes: Sequence[Node],
    *,
    target: str | None = None,
    duration: float,
    deadline: float | None = None,
    name: str = "",
) -> ResolvedStep:
    """A step for `fault` with typed `params`, on the node `target` names (a name, a role, "any" or None for the
    fault's own role); the deadline defaults to the fault's."""
    return ResolvedStep(
        name=name or fault.name,
        fault=fault,
        node=pick(nodes, target, fault.target_role),
        params=fault.pinned(params, nodes),
        duration=duration,
        deadline=deadline if deadline is not None else default_deadline(fault, duration),
        nodes=tuple(nodes),
    )


def fault_of(name: str, faults: Registry[Registered] = FAULTS) -> Fault:
    fault: Fault = faults.get(name)()  # type: ignore[assignment]
    return fault


def resolve_step(step: FaultStep, nodes: Sequence[Node], faults: Registry[Registered] = FAULTS) -> ResolvedStep:
    """A playbook's fault step: its params validated once against the fault's model, its node picked once."""
    fault = fault_of(step.fault, faults)
    params = faults.params_model(step.fault).model_validate(step.params)
    own_deadline = step.deadline if "deadline" in step.model_fields_set else None
    target = step.target.node if step.target else None
    resolved = resolve(
        fault, params, nodes, target=target, duration=step.duration, deadline=own_deadline, name=step.name
    )
    return replace(resolved, after=step.after, weight=step.weight, scale_up=step.scale_up)


def resolve_groups(
    steps: Sequence[FaultStep | ConcurrentStep], nodes: Sequence[Node], faults: Registry[Registered] = FAULTS
) -> list[list[ResolvedStep]]:
    """A playbook's steps in order, each a group of the steps that run together (one, unless concurrent)."""
    return [
        [resolve_step(s, nodes, faults) for s in (step.concurrent if isinstance(step, ConcurrentStep) else [step])]
        for step in steps
    ]
