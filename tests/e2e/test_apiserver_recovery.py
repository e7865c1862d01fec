"""apiserver.down meeting a hundred simulated nodes, from the catalog's one run of playbooks/apiserver-down.yaml
(`simulatedNodes: 100`): the apiserver_recovery measurement times the way back (answering, every client watching
again, every heartbeat renewed, every node Ready) and the clients' re-lists meanwhile; the run makes the simulated
nodes first and removes them after.
"""

from __future__ import annotations

from typing import Any

from chaoskit.cluster.kwok.converge import simulated_names
from chaoskit.measurements.apiserver_recovery_tracker import STAGES
from chaoskit.seams.kube import Kube
from tests.e2e.catalog import Catalog
from tests.e2e.conftest import took
from tests.e2e.radius import WATCHES_CLUSTER, touches

PLAYBOOK = "apiserver-down"
SIMULATED = 100  # the playbook's simulatedNodes
REAL = 3  # kind-config.yaml's nodes


def _measurement(catalog: Catalog) -> dict[str, Any]:
    (run,) = [r for r in catalog.record["runs"] if r["playbook"] == PLAYBOOK]
    (m,) = [m for m in run["measurements"] if m["type"] == "apiserver_recovery"]
    return dict(m)


@touches()
def test_the_way_back_is_timed_stage_by_stage_with_every_simulated_node_counted(catalog: Catalog) -> None:
    m = _measurement(catalog)
    print("\n" + "\n".join(m["notes"]))
    assert not m["errors"], m["errors"]
    assert m["extra"]["baseline"]["nodes"] == SIMULATED + REAL, "the simulated nodes were there when it started"
    stages = {s["stage"]: s for s in m["samples"]}
    assert sorted(stages) == sorted(STAGES), stages
    back = stages["api_back"]
    assert took(back) > 5.0, "a stopped API server is gone for longer than a few polls"
    for s in stages.values():  # each bracket is the polls' spacing measured, not one constant
        assert 0 < s["precision"] < 15.0, s
    assert len({round(s["precision"], 6) for s in stages.values()}) > 1, stages


@touches()
def test_the_clients_watches_were_seen_below_the_mark_after_the_return_and_their_relists_counted(
    catalog: Catalog,
) -> None:
    """watches_back is observed, not assumed: after the return a look saw fewer watches than the mark (the new
    process starts with none), and later ones the clients' watches open again."""
    m = _measurement(catalog)
    mark = 0.95 * m["extra"]["baseline"]["watches"]
    back_at = m["extra"]["reached"]["api_back"]
    after = [w for w in m["extra"]["windows"] if w["to"] >= back_at]
    assert after and min(w["watches"] for w in after) < mark <= max(w["watches"] for w in after), (mark, after)
    before = [w for w in m["extra"]["windows"] if w["to"] < back_at]
    assert before, "no window before the outage: no steady LIST rate to compare"
    assert all(w["lists_per_s"] is not None and w["single_p99"] is not None for w in after[:3]), after[:3]


@touches(WATCHES_CLUSTER)
def test_the_simulated_nodes_are_gone_after_the_run(catalog: Catalog, kube: Kube) -> None:
    assert catalog.record["runs"], "the catalog ran"
    assert simulated_names(kube) == [], "the run puts back the count it found: none"
