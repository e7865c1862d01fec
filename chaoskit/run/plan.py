"""What `chaoskit run --dry-run` shows of a playbook's steps: the exact node, every line and its reverse, the hold,
the deadline and any scale-up; nothing is touched."""

from __future__ import annotations

from typing import Any

from chaoskit.model.playbook import Playbook
from chaoskit.registry import FAULTS, Registered, Registry
from chaoskit.seams.nodeexec import Node
from chaoskit.step import ResolvedStep, resolve_playbook


def plan_steps(pb: Playbook, nodes: list[Node], faults: Registry[Registered] = FAULTS) -> list[dict[str, Any]]:
    """Per step the exact node, the commands, their reverse and the deadline."""
    return [_planned(pb, step) for step in resolve_playbook(pb, nodes, faults)]


def _planned(pb: Playbook, step: ResolvedStep) -> dict[str, Any]:
    planned: dict[str, Any] = {
        "step": step.name,
        "fault": step.fault.name,
        "node": step.node.name,
        "summary": step.plan.summary,
        "after_s": step.after,
        "hold_s": step.duration,
        "deadline_s": step.deadline,
        **step.plan.steps(),
    }
    if step.scale_up is not None:
        up = step.scale_up
        planned["scale_up"] = f"at {up.at}: raise {_scaled_hpa(pb)} minReplicas to {up.min_replicas} ({_undone(pb)})"
    return planned


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
