"""A lease as evidence, and the finding of a leader lease nobody renews (chaoskit.components.leases reads it)."""

from __future__ import annotations

from chaoskit.components.leases import LeaseState
from chaoskit.diagnosers.kit.base import Assessed, Evidence, Finding
from chaoskit.diagnosers.kit.common import api_unavailable, iso
from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.figures import seconds


def lease_evidence(lease: LeaseState, check: str, path: str) -> Evidence:
    """What a lease shows, as evidence of `check`."""
    return Evidence(
        check,
        f"GET {path}",
        {
            "holder": lease.holder or None,
            "renew_time": iso(lease.renewed),
            "age_s": None if lease.age is None else round(lease.age, 1),
            "lease_duration_s": lease.duration,
        },
    )


def assess_leader_lease(
    component: str, lease_name: str, path: str, fetched: Fetched, now: float, grace: float, *, effect: str
) -> Assessed:
    """The leader lease renewed within its duration (plus `grace`), or nobody leads and `effect` follows."""
    if not fetched.ok:
        return api_unavailable(component, "leader-lease", f"GET {path}", fetched.error)
    lease = LeaseState.of(fetched.data, now)
    e = lease_evidence(lease, "leader-lease", path)
    if not lease.stale(grace):
        return Assessed(e)
    since = "never renewed" if lease.age is None else f"last renewed {seconds(lease.age)} ago"
    return Assessed(
        e,
        (
            Finding(
                "critical",
                component,
                f"No {lease_name} is leading: lease {since} (duration {seconds(lease.duration)}, holder "
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
