"""Pure parts of the playbook runner: node resolution, dry-run plans, exit codes."""

from __future__ import annotations

import pytest

from chaoskit.cluster.kind import NodeContainer
from chaoskit.errors import UsageError
from chaoskit.playbook import parse_playbook
from chaoskit.registry import load_catalog
from chaoskit.runner import EXIT_CODES, RunRecord, plan_steps, resolve_node

load_catalog()
NODES = [
    NodeContainer("chaoskit-control-plane", "control-plane", "img", "running"),
    NodeContainer("chaoskit-worker2", "worker", "img", "running"),
    NodeContainer("chaoskit-worker", "worker", "img", "running"),
]

PLAYBOOK = """\
apiVersion: chaoskit.dev/v1alpha1
kind: Playbook
metadata: {name: two-faults}
spec:
  steps:
    - fault: scheduler.down
      duration: 10s
    - concurrent:
        - fault: kube-proxy.freeze
          target: {node: chaoskit-worker2}
          duration: 5s
          deadline: 30s
        - fault: kubelet.stop
          target: {node: worker}
          duration: 5s
"""


def test_a_role_picks_the_first_node_of_that_role_by_name() -> None:
    assert resolve_node(NODES, "worker", "control-plane") == "chaoskit-worker"
    assert resolve_node(NODES, None, "control-plane") == "chaoskit-control-plane"
    assert resolve_node(NODES, "any", "worker") == "chaoskit-worker"
    assert resolve_node(NODES, "chaoskit-worker2", "control-plane") == "chaoskit-worker2"


def test_an_unknown_node_is_a_usage_error_listing_the_nodes() -> None:
    with pytest.raises(UsageError, match="chaoskit-worker2"):
        resolve_node(NODES, "chaoskit-worker9", "worker")


def test_dry_run_plan_has_exact_nodes_commands_reverse_and_deadlines() -> None:
    steps = plan_steps(parse_playbook(PLAYBOOK), NODES)
    assert [(s["step"], s["node"]) for s in steps] == [
        ("1-scheduler.down", "chaoskit-control-plane"),
        ("2.1-kube-proxy.freeze", "chaoskit-worker2"),
        ("2.2-kubelet.stop", "chaoskit-worker"),
    ]
    assert steps[0]["deadline_s"] == 70.0 and steps[1]["deadline_s"] == 30.0
    assert steps[2]["apply"] == ["systemctl stop kubelet"] and steps[2]["revert"] == ["systemctl start kubelet"]


def test_verdicts_map_to_the_documented_exit_codes() -> None:
    assert EXIT_CODES == {"passed": 0, "deviated": 1, "aborted": 4, "error": 4, "interrupted": 130}
    rec = RunRecord("p", "c", "ns", "j", "id", 0.0, verdict="deviated")
    assert rec.to_dict()["exit_code"] == 1
