"""Leases as heartbeats: a leader-election lease shows whether a control-plane component is alive and leading, a
node lease whether kubelet still reports. What matters is how long ago it was renewed, against its duration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chaoskit.model.timeline import api_time


@dataclass(frozen=True)
class LeaseState:
    holder: str
    renewed: float | None  # epoch seconds
    duration: float  # leaseDurationSeconds
    age: float | None  # seconds since the last renewal

    @classmethod
    def of(cls, lease: dict[str, Any], now: float) -> LeaseState:
        spec = lease.get("spec") or {}
        renewed = api_time(spec.get("renewTime"))
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            renewed=renewed,
            duration=float(spec.get("leaseDurationSeconds") or 15),
            age=None if renewed is None else max(0.0, now - renewed),  # a clock a little ahead is no future renewal
        )

    def stale(self, grace: float) -> bool:
        return self.age is None or self.age > self.duration + grace
