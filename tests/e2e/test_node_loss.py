"""node.partitioned and the node-loss measurement on the real cluster, from the catalog's one run of
playbooks/node-partitioned.yaml: the first worker cut off from the API server, its web pod evicted at its 10 s
toleration and back on the other worker.

While the partition holds, an observer looks at both sides: the API server's (the node NotReady and tainted
unreachable, the pod deleted) and the node's own (kubelet still running the evicted pod's container, because nothing
told it): that is a partition, not a stopped kubelet.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from chaoskit.components.node_lifecycle import UNREACHABLE
from chaoskit.model.moments import epoch
from chaoskit.model.timeline import NODE_LOSS_STAGES
from chaoskit.seams.nodeexec import named
from tests.e2e.catalog import Catalog, Holding, observe
from tests.e2e.conftest import took
from tests.e2e.radius import touches

pytestmark = touches()

PLAYBOOK = "node-partitioned"
NODE = "chaoskit-worker"  # the playbook's target: the first worker by name
GRACE, TOLERATION = 30.0, 10.0  # kind-config.yaml's node-monitor-grace-period; the playbook's tolerationSeconds


@observe("node.partitioned")
def both_sides_of_the_partition(h: Holding) -> dict[str, Any]:
    """Until the revert: whether the API server saw the node tainted and its pod deleted, and whether the node kept
    running that pod's container meanwhile (crictl, inside the node)."""
    node, seen = NODE, {"tainted": False, "deleted_yet_running": []}
    while not h.reverted.wait(1.0):
        taints = h.env.kube.get(f"/api/v1/nodes/{node}")["spec"].get("taints") or []
        seen["tainted"] = seen["tainted"] or any(t.get("key") == UNREACHABLE for t in taints)
        pods = h.env.kube.get(f"/api/v1/namespaces/{h.namespace}/pods", fieldSelector=f"spec.nodeName={node}")
        deleted = [p["metadata"]["name"] for p in pods["items"] if p["metadata"].get("deletionTimestamp")]
        if deleted:
            listed = h.env.nodes.run(named(node), ["crictl", "pods", "-o", "json", "--state", "ready"], check=False)
            running = {p["metadata"]["name"] for p in json.loads(listed.stdout or "{}").get("items", [])}
            seen["deleted_yet_running"] = sorted(set(deleted) & running) or seen["deleted_yet_running"]
    seen["observed_until"] = time.time()
    return seen


def _measurement(catalog: Catalog) -> dict[str, Any]:
    (run,) = [r for r in catalog.record["runs"] if r["playbook"] == PLAYBOOK]
    (m,) = [m for m in run["measurements"] if m["type"] == "node_loss"]
    return dict(m)


def test_the_partitioned_node_is_tainted_and_its_evicted_pod_keeps_running_on_it(catalog: Catalog) -> None:
    (step,) = [s for r in catalog.record["runs"] if r["playbook"] == PLAYBOOK for s in r["steps"]]
    seen = catalog.seen.get((PLAYBOOK, step["step"]), {})
    assert "observer_error" not in seen, seen
    assert seen["tainted"], f"the node was never tainted {UNREACHABLE} while cut off: {seen}"
    assert seen["deleted_yet_running"], f"no pod deleted by the API server still ran on the cut-off node: {seen}"


def test_node_loss_times_every_stage_and_the_settings_it_waited_on(catalog: Catalog) -> None:
    m = _measurement(catalog)
    assert not m["errors"], m["errors"]
    stages = {s["stage"] for s in m["samples"]}
    assert stages == {s.name for s in NODE_LOSS_STAGES}, f"stages seen: {sorted(stages)}; notes: {m['notes']}"
    settings = m["extra"]["settings"]
    assert settings["node_monitor_grace_period_s"] == GRACE and settings["toleration_s"] == TOLERATION
    by_stage = {s["stage"]: s for s in m["samples"]}
    seconds = {k: took(s) for k, s in by_stage.items()}
    # the settings are what those stages took, within the node controller's 5 s monitor period
    assert GRACE <= seconds["not_ready"] <= GRACE + 6, seconds
    # the taint-eviction controller counts the toleration from when *it* received the taint; the stage starts when
    # our watch did, which can be later by as much as the watch delay measured over the run: the stage's precision
    late = by_stage["evicted"]["precision"]
    assert TOLERATION - late <= seconds["evicted"] <= TOLERATION + 2, (seconds, m["extra"]["watch_delay"])
    rules_on = {s["subject"].split("@")[1] for s in m["samples"] if s["stage"] == "rules_programmed"}
    assert rules_on == {"chaoskit-control-plane", "chaoskit-worker2"}  # every node but the lost one, NODE
    work = sum(v for k, v in seconds.items() if k not in ("not_ready", "evicted"))
    print(f"\nnode loss stages (s): {json.dumps({k: round(v, 3) for k, v in seconds.items()})}; work {work:.2f}s")
    assert m["summaries"]["total"]["max"] == pytest.approx(
        max(epoch(s["end"]) or 0.0 for s in m["samples"]) - (epoch(by_stage["not_ready"]["start"]) or 0.0), abs=0.01
    )
