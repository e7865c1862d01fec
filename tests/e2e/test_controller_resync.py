"""controller-manager.down at a size, from the catalog's one run of playbooks/controller-manager-down.yaml
(`simulatedNodes: 100`, 20 Deployments of simulated pods): the controller_resync measurement scales every Deployment
while the controller manager is away, and times each from its return (the leader Lease it takes) to synced, its
pods created and Ready.
"""

from __future__ import annotations

from typing import Any

from chaoskit.measurements.resync_tracker import STAGES
from chaoskit.model.timeline import MeasurementResult
from tests.e2e.catalog import Catalog
from tests.e2e.radius import touches

pytestmark = touches()

PLAYBOOK = "controller-manager-down"
DEPLOYMENTS = 20  # the playbook's measurement params


def _measurement(catalog: Catalog) -> dict[str, Any]:
    (run,) = [r for r in catalog.record["runs"] if r["playbook"] == PLAYBOOK]
    (m,) = [m for m in run["measurements"] if m["type"] == "controller_resync"]
    return dict(m)


def test_every_deployment_changed_while_it_was_away_caught_up_after_it_led_again_and_not_before(
    catalog: Catalog,
) -> None:
    m = _measurement(catalog)
    print("\n" + "\n".join(m["notes"]))
    assert not m["errors"], m["errors"]
    s = m["extra"]["resync"]
    # scaled while the lease was stale, and nothing reconciled them until a leader took it again
    assert s["gone_at"] < s["scaled_at"] < s["leads_at"], s
    assert s["before_leader"] == [], f"reconciled while no controller manager led: {s['before_leader']}"
    assert s["deployments"] == s["ready"] == DEPLOYMENTS, s
    samples = MeasurementResult.from_dict(m).samples  # its moments read back from RFC 3339, to the millisecond
    for stage in STAGES:
        found = [x for x in samples if x.stage == stage]
        assert len(found) == DEPLOYMENTS, (stage, len(found))
        assert all(x.end >= x.start for x in found), stage
    # the stages follow each other: each Deployment's last one ends when it was Ready
    ready = max(x.end for x in samples if x.stage == "ready")
    assert abs(ready - (s["leads_at"] + s["last_ready_s"])) < 1e-3, (ready, s)
    first = [x for x in samples if x.stage == "deployment_synced"]
    assert all(abs(x.start - s["leads_at"]) < 1e-3 for x in first), "timed from the leader's own stamp"
