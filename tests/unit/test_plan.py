"""A run planned once: plan() resolves a playbook's steps, checks, measurements, probes, stage and cluster changes
against the nodes and the catalog, and nothing after it reads the playbook."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel

import chaoskit
from chaoskit.checks.base import Check, Outcome
from chaoskit.checks.cluster import NodeChecks, NodesReady
from chaoskit.env import Env
from chaoskit.errors import UsageError
from chaoskit.measurements.base import TargetParams
from chaoskit.measurements.hpa_scale_up import HpaScaleUp
from chaoskit.playbook import parse_playbook
from chaoskit.registry import CATALOG, load_catalog
from chaoskit.run.dry_run import shown
from chaoskit.run.plan import PlannedCheck, RunPlan, plan
from chaoskit.run.steady import steady_check
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec, Node

load_catalog()
NODES = [
    Node("chaoskit-control-plane", "control-plane"),
    Node("chaoskit-worker2", "worker"),
    Node("chaoskit-worker", "worker"),
]
HEAD = "apiVersion: chaoskit.dev/v1alpha1\nkind: Playbook\nmetadata: {name: planned}\nspec:\n"
STEPS = """\
  steps:
    - fault: scheduler.down
      duration: 10s
    - concurrent:
        - fault: kube-proxy.freeze
          target: {node: chaoskit-worker2}
          duration: 5s
        - fault: kubelet.stop
          target: {node: worker}
          duration: 5s
          weight: 2
"""
SCALED = STEPS + "          scaleUp: {minReplicas: 3}\n"  # the last step's


def _plan(spec: str) -> RunPlan:
    return plan(parse_playbook(HEAD + spec), NODES)


def test_the_steps_are_resolved_once_in_their_groups_with_typed_params_nodes_and_locks() -> None:
    run = _plan("  workload: {}\n" + SCALED)
    assert [[(s.name, s.node.name) for s in g] for g in run.groups] == [
        [("1-scheduler.down", "chaoskit-control-plane")],
        [("2.1-kube-proxy.freeze", "chaoskit-worker2"), ("2.2-kubelet.stop", "chaoskit-worker")],
    ]
    assert [s.name for s in run.steps] == ["1-scheduler.down", "2.1-kube-proxy.freeze", "2.2-kubelet.stop"]
    assert all(isinstance(s.params, CATALOG.faults.params_model(s.fault.name)) for s in run.steps)
    assert run.steps[2].weight == 2 and run.steps[2].scale_up is not None
    assert run.locks == sorted({s.lock for s in run.steps}) and len(run.locks) == 3


def test_the_stage_is_chaoskits_namespace_with_its_workload_or_the_subject_and_every_scale_up() -> None:
    run = _plan("  workload: {replicas: 2}\n" + SCALED)
    assert (run.name, run.cluster, run.namespace) == ("planned", "chaoskit", "chaoskit-planned")
    assert run.stage.workload is not None and run.stage.workload.replicas == 2 and run.stage.subject is None
    assert run.stage.scale_ups == (3,) and run.owns_namespace
    theirs = _plan("  subject: {namespace: shop, deployment: web}\n" + SCALED)
    assert theirs.stage.workload is None and theirs.stage.subject is not None
    assert theirs.stage.subject.deployment == "web" and not theirs.owns_namespace  # no load, no probes


def test_the_steady_state_checks_are_typed_once_and_say_whether_they_judge_nodes() -> None:
    run = _plan(
        "  steadyState:\n    - {check: nodes-ready, params: {exceptNodes: [chaoskit-worker2]}, timeout: 30s}\n"
        "    - {check: apiserver-ready}\n" + STEPS
    )
    ready, api = run.steady_state
    assert (ready.name, ready.check, ready.timeout) == ("nodes-ready", NodesReady, 30.0)
    assert isinstance(ready.params, NodeChecks) and ready.params.except_nodes == ["chaoskit-worker2"]
    assert ready.judges_nodes and not api.judges_nodes


def test_the_measurements_are_typed_once_with_what_they_time_on_every_node() -> None:
    run = _plan(
        "  workload: {}\n  measurements:\n    - {name: up, type: hpa_scale_up, params: {namespace: elsewhere}}\n"
        + STEPS
    )
    (m,) = run.measurements
    assert (m.name, m.kind, m.measurement) == ("up", "hpa_scale_up", HpaScaleUp)
    assert isinstance(m.params, TargetParams) and m.params.namespace == "elsewhere"
    assert m.every_node == HpaScaleUp.every_node and run.every_node == HpaScaleUp.every_node != frozenset()
    assert _plan(STEPS).every_node == frozenset()


def test_an_http_probe_s_node_is_picked_once_as_a_step_s_is() -> None:
    probes = (
        "  probes:\n"
        "    - {name: shop, http: {url: 'http://shop.shop.svc/', node: worker}, slo: {successRate: 99}}\n"
        "    - {name: anywhere, http: {url: 'http://shop.shop.svc/'}, slo: {successRate: 99}}\n"
        "    - {name: up, command: {argv: ['true']}}\n"
    )
    run = _plan(probes + STEPS)
    assert [(p.probe.name, p.node) for p in run.probes] == [
        ("shop", "chaoskit-worker"),
        ("anywhere", None),
        ("up", None),
    ]
    assert run.owns_namespace  # the http probes' pods live in chaoskit's namespace
    with pytest.raises(UsageError, match="chaoskit-worker9"):
        _plan(probes.replace("node: worker", "node: chaoskit-worker9") + STEPS)


def test_the_cluster_changes_are_planned_and_shown_as_before() -> None:
    run = _plan("  kubeProxyMode: nftables\n  simulatedNodes: 3\n" + STEPS)
    assert (run.changes.kube_proxy_mode, run.changes.simulated_nodes, run.changes.any) == ("nftables", 3, True)
    assert not _plan(STEPS).changes.any
    said = shown(run)
    assert list(said) == [
        "playbook",
        "cluster",
        "namespace",
        "kubeProxyMode",
        "simulatedNodes",
        "steadyState",
        "steps",
    ]
    assert said["simulatedNodes"].startswith("3 simulated nodes (kwok-node-0..2")


def test_a_playbook_that_does_not_diagnose_or_limit_plans_so() -> None:
    run = _plan(
        "  diagnose: false\n  workload: {}\n  measurements:\n    - {name: up, type: hpa_scale_up}\n"
        "  thresholds:\n    - {measurement: up, stat: max, max: 60s}\n" + STEPS
    )
    assert not run.diagnose and [(t.measurement, t.stat, t.max) for t in run.thresholds] == [("up", "max", 60.0)]


class _Seen(Check):
    """Passes, noting the params it was asked with."""

    name = "test-seen"
    Params = NodeChecks
    asked: ClassVar[list[list[str]]] = []

    def run(self, env: Env, params: BaseModel) -> Outcome:
        assert isinstance(params, NodeChecks)
        _Seen.asked.append(params.except_nodes)
        return Outcome(True, "ok")


def test_a_planned_check_leaves_out_the_nodes_another_run_is_breaking_beside_its_own() -> None:
    planned = PlannedCheck("test-seen", _Seen, NodeChecks.model_validate({"exceptNodes": ["w9"]}), 5.0)
    env = Env(FakeKube(), FakeNodeExec(), "chaoskit")
    assert steady_check(env, planned, lambda: {"w2", "w1"}).ok
    assert steady_check(env, planned).ok
    assert _Seen.asked == [["w1", "w2", "w9"], ["w9"]]
    assert planned.params == NodeChecks.model_validate({"exceptNodes": ["w9"]})  # the plan itself is left as it was


DOWNSTREAM = ("runner.py", "suite.py", "run/steps.py", "run/steady.py", "run/measuring.py", "run/probing.py")


@pytest.mark.parametrize("module", [*DOWNSTREAM, "run/stage.py", "run/during.py", "run/dry_run.py"])
def test_nothing_after_the_plan_takes_the_playbook(module: str) -> None:
    tree = ast.parse((Path(chaoskit.__file__).parent / module).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert "Playbook" not in imported
