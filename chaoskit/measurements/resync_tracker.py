"""The controller manager catching up on Deployments changed while it was away (pure: no I/O, no clock).

From the controller manager's leader Lease and each Deployment's updates as a watch received them:

- gone: the Lease not renewed for `stale_after` seconds (it renews every 2 s): the leader is away;
- leads: the acquireTime of the Lease a leader took after that, stamped by the controller manager itself;
- per Deployment changed while it was away, from leads: `deployment_synced` (the deployment controller observed the
  new spec: status.observedGeneration), `replicas_created` (its ReplicaSet's pods exist: status.replicas), `ready`
  (every pod Ready: status.readyReplicas; the scheduler and the nodes' part too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chaoskit.model.timeline import api_time

TYPE = "controller_resync"
STAGES = ("deployment_synced", "replicas_created", "ready")

Obj = dict[str, Any]


@dataclass
class ResyncTracker:
    stale_after: float = 6.0
    holder: str = ""
    renewed: float | None = None
    gone_at: float | None = None  # our clock, when we saw the Lease stale
    leads_at: float | None = None  # the controller manager's stamp, when a leader took the Lease after gone
    scaled_at: float | None = None
    wanted: int = 0
    generation: dict[str, int] = field(default_factory=dict)  # Deployment -> its generation once we scaled it
    reached: dict[str, dict[str, float]] = field(default_factory=dict)  # Deployment -> stage -> when first seen

    def lease(self, obj: Obj, now: float) -> None:
        """A look at the leader Lease at `now` (our clock)."""
        spec = obj.get("spec") or {}
        renewed, acquired = api_time(spec.get("renewTime")), api_time(spec.get("acquireTime"))
        holder = spec.get("holderIdentity") or ""
        if self.gone_at is None:
            if renewed is not None and now - renewed > self.stale_after:
                self.gone_at = now
            else:
                self.holder, self.renewed = holder, renewed
            return
        if self.leads_at is None and acquired is not None and (holder != self.holder or acquired > self.gone_at):
            self.leads_at = acquired

    @property
    def gone(self) -> bool:
        return self.gone_at is not None

    def scaled(self, generations: dict[str, int], wanted: int, at: float) -> None:
        self.generation, self.wanted, self.scaled_at = dict(generations), wanted, at

    def deployment(self, obj: Obj, at: float) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        generation = self.generation.get(name)
        if generation is None:
            return
        st = obj.get("status") or {}
        done = self.reached.setdefault(name, {})
        held = {
            "deployment_synced": st.get("observedGeneration", 0) >= generation,
            "replicas_created": st.get("observedGeneration", 0) >= generation and st.get("replicas") == self.wanted,
            "ready": st.get("observedGeneration", 0) >= generation and st.get("readyReplicas") == self.wanted,
        }
        for stage, ok in held.items():
            if ok and stage not in done:
                done[stage] = at

    def waiting(self) -> int:
        """Deployments we changed that are not all Ready yet."""
        return sum(1 for name in self.generation if "ready" not in self.reached.get(name, {}))

    def stages(self) -> dict[str, dict[str, float]]:
        """Per Deployment, each stage's seconds from the leader's return; only stages reached after it."""
        if self.leads_at is None:
            return {}
        return {
            name: {s: at - self.leads_at for s, at in done.items() if at >= self.leads_at}
            for name, done in sorted(self.reached.items())
        }

    def summary(self) -> dict[str, Any]:
        per = self.stages()
        ready = sorted(d["ready"] for d in per.values() if "ready" in d)
        synced_before = sorted(n for n, d in self.reached.items() if self.leads_at and min(d.values()) < self.leads_at)
        return {
            "deployments": len(self.generation),
            "gone_at": self.gone_at,
            "leads_at": self.leads_at,
            "scaled_at": self.scaled_at,
            "ready": len(ready),
            "last_ready_s": ready[-1] if ready else None,
            "ready_per_s": len(ready) / ready[-1] if ready and ready[-1] > 0 else None,
            # a stage reached before the leader was back: someone else reconciled it (should be none)
            "before_leader": synced_before,
        }
