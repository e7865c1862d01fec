"""ChaosExperiment ↔ chaoskit: the resource's spec read as a playbook, a run record written back as its status.
Pure functions: no API calls, so the operator's logic is unit-tested without a cluster."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML

from chaoskit.cluster.assets import deploy_dir
from chaoskit.cluster.experiments import PHASES
from chaoskit.engine import RevertOutcome
from chaoskit.errors import PlaybookError
from chaoskit.model.playbook import Playbook
from chaoskit.model.record import RunRecord
from chaoskit.playbook import parse_playbook

GROUP, VERSION, PLURAL = "chaoskit.dev", "v1alpha1", "chaosexperiments"


def _crds() -> list[dict[str, Any]]:
    """The CustomResourceDefinitions chaoskit install applies (deploy/chaoskit/crd.yaml)."""
    return [d for d in YAML(typ="safe").load_all((deploy_dir() / "crd.yaml").read_text()) if d]


def crd() -> dict[str, Any]:
    """The ChaosExperiment CustomResourceDefinition."""
    return next(d for d in _crds() if d["spec"]["group"] == GROUP)


def schedule_crd() -> dict[str, Any]:
    """The ChaosSchedule CustomResourceDefinition (deploy/chaoskit/schedule-crd.yaml)."""
    found: dict[str, Any] = YAML(typ="safe").load((deploy_dir() / "schedule-crd.yaml").read_text())
    return found


PEERING = "chaoskit"  # the kopf peering the operators of a cluster share


def peering(namespaces: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """kopf's peering CRDs, then where the operators meet: the cluster's ClusterKopfPeering, or a KopfPeering in each
    namespace an operator restricted to them watches."""
    labels = {"app.kubernetes.io/part-of": "chaoskit"}
    found = [d for d in _crds() if d["spec"]["group"] == "kopf.dev"]
    if not namespaces:
        meta = {"name": PEERING, "labels": labels}
        return [*found, {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": meta}]
    return found + [
        {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfPeering",
            "metadata": {"name": PEERING, "namespace": ns, "labels": labels},
        }
        for ns in namespaces
    ]


def resource_path(namespace: str, name: str) -> str:
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/{name}"


@dataclass(frozen=True)
class Invalid:
    """The spec is not a valid playbook: every problem, as `spec.path: message` (no line: the resource has none)."""

    problems: list[str]

    @property
    def message(self) -> str:
        return "; ".join(self.problems)


def playbook_of(body: dict[str, Any]) -> Playbook | Invalid:
    """The resource read as a playbook named after it, through the same loader as `chaoskit validate`."""
    meta = body.get("metadata", {})
    doc = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Playbook",
        "metadata": {"name": meta.get("name", ""), "description": f"ChaosExperiment {meta.get('namespace')}"},
        "spec": body.get("spec") or {},
    }
    out = io.StringIO()
    YAML(typ="safe").dump(plain(doc), out)
    try:
        return parse_playbook(out.getvalue(), file=f"{PLURAL}/{meta.get('namespace')}/{meta.get('name')}")
    except PlaybookError as exc:
        return Invalid([f"{p.path}: {p.message}" if p.path else p.message for p in exc.problems])


def plain(value: Any) -> Any:
    """kopf hands out read-only mapping views; YAML and the pure side want plain dicts and lists."""
    if hasattr(value, "items"):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def invalid_status(invalid: Invalid) -> dict[str, Any]:
    return {
        "phase": "Invalid",
        "message": invalid.message,
        "problems": invalid.problems,
        "conditions": [_condition("Completed", "True", "Invalid", "nothing was injected: " + invalid.message)],
    }


def running_status(journal: str, started_at: str, journal_configmap: str = "") -> dict[str, Any]:
    return {
        "phase": "Running",
        "message": "starting",
        "journal": journal,
        "journalConfigMap": journal_configmap,  # the cluster's copy, which outlives the operator's pod
        "startedAt": started_at,
        "conditions": [_condition("Completed", "False", "Running", "the playbook is running")],
    }


def final_status(record: RunRecord, finished_at: str) -> dict[str, Any]:
    """The verdict and what each step did, as `kubectl get chx -o yaml` shows it; the journal keeps the rest."""
    phase = PHASES[record.verdict]
    failed = [e for s in record.steps for e in s.failures + s.errors] + record.errors
    message = "; ".join(failed) if failed else f"verdict {record.verdict}"
    return {
        "phase": phase,
        "verdict": record.verdict,
        "exitCode": record.exit_code,
        "score": _round(record.score),  # 0-100, none when the run was not judged (error); schedules list it
        "message": message[:1000],
        "finishedAt": finished_at,
        "steps": [
            {
                "step": s.step,
                "fault": s.fault,
                "node": s.node,
                "effectSeconds": _round(s.effect_s),
                "namedSeconds": _round(s.named_s),  # injected -> the diagnosis named the fault (when diagnosing)
                "heldSeconds": _round(s.held_s),
                "recoverySeconds": _round(s.recovery_s),
                "ok": s.held,
                "factCheck": (s.fact_check or {}).get("verdict"),  # confirmed | mismatch | inconclusive
                "errors": s.errors,
                "failures": s.failures,
            }
            for s in record.steps
        ],
        "steadyState": {
            "before": [{"check": c.check, "ok": c.ok, "detail": c.detail} for c in record.before],
            "after": [{"check": c.check, "ok": c.ok, "detail": c.detail} for c in record.after],
        },
        "thresholds": [t.to_dict() for t in record.thresholds],
        "conditions": [_condition("Completed", "True", phase, message[:1000])],
    }


def interrupted_status(outcome: RevertOutcome, finished_at: str, fired: list[str] | None = None) -> dict[str, Any]:
    """A run the operator lost (it was restarted mid-run): what it found still injected, and reverted."""
    message = f"the operator restarted during the run; reverted {len(outcome.reverted)} fault(s) its journal left"
    if outcome.left:
        left = ", ".join(f"{i.fault} on {i.node}: {error[:200]}" for i, error in outcome.left)
        message += f"; could not revert {left} (their dead-man switches keep retrying on the nodes)"
    if outcome.held:  # journaled reverted, yet their verify lines say the fault is still there
        held = ", ".join(f"{i.fault} on {i.node}: {said[:200]}" for i, said in outcome.held)
        message += f"; still holding though journaled reverted: {held}"
    if outcome.unrestored:
        message += f"; could not put back what the run changed: {'; '.join(e[:200] for e in outcome.unrestored)}"
    if fired:
        message += f"; its journal was lost: fired the {len(fired)} dead-man switch(es) it had armed on the nodes"
    return {
        "phase": "Interrupted",
        "verdict": "interrupted",
        "exitCode": 130,
        "message": message,
        "finishedAt": finished_at,
        "conditions": [_condition("Completed", "True", "Interrupted", message)],
    }


def _condition(kind: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": message}


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 3)
