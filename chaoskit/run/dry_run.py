"""What `chaoskit run --dry-run` shows of a run's plan: the cluster changes, the checks and probes, and per step the
exact node, every line and its reverse, the hold, the deadline and any scale-up; nothing is touched."""

from __future__ import annotations

from typing import Any

from chaoskit.model.probes import probe_words
from chaoskit.run.plan import ClusterChanges, RunPlan, StagePlan
from chaoskit.step import ResolvedStep


def shown(run: RunPlan) -> dict[str, Any]:
    """The run as the dry run prints it."""
    subject = run.stage.subject
    return {
        "playbook": run.name,
        "cluster": run.cluster,
        "namespace": run.namespace,
        **({"subject": subject.model_dump(exclude_none=True)} if subject else {}),
        **cluster_changes(run.changes),
        "steadyState": [c.name for c in run.steady_state],
        **({"probes": [probe_words(p.probe) for p in run.probes]} if run.probes else {}),
        "steps": steps_shown(run),
    }


def steps_shown(run: RunPlan) -> list[dict[str, Any]]:
    """Per step the exact node, the commands, their reverse and the deadline."""
    return [_planned(run.stage, step) for step in run.steps]


def cluster_changes(changes: ClusterChanges) -> dict[str, str]:
    """What the run changes in the whole cluster before its workload, and how it is put back."""
    out = {}
    if changes.kube_proxy_mode is not None:
        mode = changes.kube_proxy_mode
        out["kubeProxyMode"] = f"every kube-proxy switched to {mode}, its mode put back after the run"
    if (count := changes.simulated_nodes) is not None:
        out["simulatedNodes"] = (
            f"{count} simulated nodes (kwok-node-0..{count - 1}, kwok's controller in kube-system), the count found "
            "put back after the run"
            if count
            else "every simulated node removed, the count found put back after the run"
        )
    return out


def _planned(stage: StagePlan, step: ResolvedStep) -> dict[str, Any]:
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
        planned["scale_up"] = (
            f"at {up.at}: raise {_scaled_hpa(stage)} minReplicas to {up.min_replicas} ({_undone(stage)})"
        )
    return planned


def _scaled_hpa(stage: StagePlan) -> str:
    s = stage.subject
    if s is None:
        return f"HPA {stage.namespace}/web"
    if s.hpa:
        return f"HPA {s.namespace}/{s.hpa}"
    what = f"Deployment {s.namespace}/{s.deployment}" if s.deployment else f"StatefulSet {s.namespace}/{s.stateful_set}"
    return f"the HPA of {what}" if s.selector is None else f"the HPA of the Deployment {s.namespace} selects"


def _undone(stage: StagePlan) -> str:
    if stage.subject is None:
        return "gone with the namespace after the run"
    return "its minReplicas put back after the run, or by chaoskit revert"
