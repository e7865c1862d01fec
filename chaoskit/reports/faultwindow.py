"""The fault on a measurement's timeline: when each step injected, took effect, was reverted and was healthy again,
and the caption saying which stage took the time and whose it was ("16.8s of 25.3s waiting for the scheduler, which
was the fault")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chaoskit.figures import seconds
from chaoskit.model.record import StepRecord
from chaoskit.model.timeline import STAGE_COMPONENTS, MeasurementResult, run_level

# a component as a sentence names it: "waiting for the scheduler"
COMPONENT_WORDS = {
    "scheduler": "the scheduler",
    "kubelet": "the kubelet",
    "controller-manager": "the controller manager",
    "kube-proxy": "kube-proxy",
    "apiserver": "the API server",
    "etcd": "etcd",
    "containerd": "the container runtime",
}


@dataclass(frozen=True)
class FaultWindow:
    """One step's fault in wall-clock seconds: injected, effect seen, revert begun, healthy again (None: not seen)."""

    fault: str
    node: str
    injected: float
    effect: float | None
    reverted: float | None
    healthy: float | None

    @property
    def component(self) -> str:
        return self.fault.split(".", 1)[0]

    @property
    def held_until(self) -> float:
        """The end of the held window: the revert, else (a step cut short) its effect or injection."""
        return self.reverted or self.effect or self.injected

    def marks(self) -> list[tuple[str, float]]:
        seen = (
            ("inject", self.injected),
            ("effect", self.effect),
            ("revert", self.reverted),
            ("healthy", self.healthy),
        )
        return [(word, at) for word, at in seen if at is not None]

    def overlaps(self, start: float, end: float) -> bool:
        return self.injected <= end and (self.healthy or self.held_until) >= start


def fault_windows(steps: Sequence[StepRecord]) -> list[FaultWindow]:
    """Each step that recorded when it injected (older records did not: they draw no window)."""
    out = []
    for s in steps:
        if s.injected_at is None:
            continue
        effect = s.injected_at + s.effect_s if s.effect_s is not None else None
        healthy = s.reverted_at + s.recovery_s if s.reverted_at is not None and s.recovery_s is not None else None
        out.append(FaultWindow(s.fault, s.node, s.injected_at, effect, s.reverted_at, healthy))
    return out


@dataclass(frozen=True)
class Slowest:
    """The stage that took the most of the slowest subject's time end to end, and whose it was."""

    stage: str
    component: str
    seconds: float
    total: float
    subject: str
    faulted: bool  # its component is the one a fault step broke while it ran

    def caption(self) -> str:
        who = COMPONENT_WORDS.get(self.component, self.component or "an unknown component")
        fault = ", which was the fault" if self.faulted else ""
        return (
            f"{seconds(self.seconds)} of {seconds(self.total)} waiting for {who}{fault} "
            f"(stage {self.stage} of {self.subject}, the slowest end to end)"
        )


def slowest_stage(
    m: MeasurementResult, faults: Sequence[FaultWindow] = (), steps: Sequence[str] = ()
) -> Slowest | None:
    """Of the subject slowest end to end, its longest stage; faulted when a fault of that stage's component held
    over it (or, for a record without fault windows, when a step of the run faulted that component)."""
    totals = m.totals()
    if not totals:
        return None
    worst = max(totals, key=lambda t: t.seconds)
    own = [
        s
        for s in m.samples
        if s.run == worst.run and (run_level(s.subject) or s.subject.split("@")[0] == worst.subject)
    ]
    if not own:
        return None
    stage = max(own, key=lambda s: s.seconds)
    component = stage.component or STAGE_COMPONENTS.get(stage.stage, "")
    if faults:
        faulted = any(f.component == component and f.overlaps(stage.start, stage.end) for f in faults)
    else:
        faulted = any(fault.split(".", 1)[0] == component for fault in steps)
    return Slowest(stage.stage, component, stage.seconds, worst.seconds, worst.subject, faulted)
