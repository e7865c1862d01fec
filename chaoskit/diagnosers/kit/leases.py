"""Leases as heartbeats: a leader-election lease shows whether a control-plane component is alive and leading, a
node lease whether kubelet still reports. What matters is how long ago it was renewed, against its duration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chaoskit.diagnosers.kit.base import Assessed, Evidence, Finding
from chaoskit.diagnosers.kit.common import age, api_unavailable, iso
from chaoskit.diagnosers.kit.sources import Fetched
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
        renew = spec.get("renewTime")
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            renewed=api_time(renew),
            duration=float(spec.get("leaseDurationSeconds") or 15),
            age=age(renew, now),
        )

    def stale(self, grace: float) -> bool:
        return self.age is None or self.age > self.duration + grace

    def evidence(self, check: str, path: str) -> Evidence:
        return Evidence(
            check,
            f"GET {path}",
            {
                "holder": self.holder or None,
                "renew_time": iso(self.renewed),
                "age_s": None if self.age is None else round(self.age, 1),
                "lease_duration_s": self.duration,
            },
        )


def assess_leader_lease(
    component: str, lease_name: str, path: str, fetched: Fetched, now: float, grace: float, *, effect: str
) -> Assessed:
    """The leader lease renewed within its duration (plus `grace`), or nobody leads and `effect` follows."""
    if not fetched.ok:
        return api_unavailable(component, "leader-lease", f"GET {path}", fetched.error)
    lease = LeaseState.of(fetched.data, now)
    e = lease.evidence("leader-lease", path)
    if not lease.stale(grace):
        return Assessed(e)
    since = "never renewed" if lease.age is None else f"last renewed {lease.age:.0f}s ago"
    return Assessed(
        e,
        (
            Finding(
                "critical",
                component,
                f"No {lease_name} is leading: lease {since} (duration {lease.duration:g}s, holder "
                f"{lease.holder or 'none'})",
                f"the leader stopped renewing (down, frozen or cut off from the API server) and no other instance took "
                f"over; {effect}",
                (e,),
                (
                    f"check the {lease_name} process on the control-plane node (process and healthz checks)",
                    f"crictl logs of {lease_name}: look for 'failed to renew lease' or 'leaderelection lost'",
                ),
            ),
        ),
    )
