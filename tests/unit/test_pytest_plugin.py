"""chaoskit's pytest plugin: `inject` is a context manager that always reverts; a failure report names the broken
components (fakes at the seams; the e2e suite runs the plugin against the real cluster)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_faults import holds
from pydantic import BaseModel

from chaoskit.diagnosers.kit.base import ComponentReport, Diagnosis, Finding
from chaoskit.env import Env
from chaoskit.faults.base import Fault, FaultPlan
from chaoskit.pytest_plugin import ChaoskitCluster, diagnosis_text
from chaoskit.registry import CATALOG, load_catalog
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec, Node

NODES = [Node("c-control-plane", "control-plane"), Node("c-worker", "worker")]


class Marked(Fault):
    """Breaks nothing; its lines say where they ran."""

    name = "test.marked"
    component = "test"
    target_role = "worker"

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        return FaultPlan(
            self.name,
            node,
            apply=("echo applied",),
            undo=("echo reverted",),
            verify=("echo verified",),
            summary="marks",
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return holds(env, plan)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return not holds(env, plan)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[ChaoskitCluster]:
    load_catalog()
    catalog = CATALOG.extended(faults=[("test.marked", Marked)])
    yield ChaoskitCluster("c", Env(FakeKube(), FakeNodeExec(nodes=NODES), "c"), NODES, tmp_path, catalog=catalog)


def _ran(cluster: ChaoskitCluster, line: str) -> bool:
    calls = cluster.env.nodes.calls  # type: ignore[attr-defined]
    return any(line in " ".join(c) for c in calls)


def test_inject_holds_the_fault_inside_the_block_and_reverts_after_it(cluster: ChaoskitCluster) -> None:
    with cluster.inject("test.marked", duration=60) as injected:
        assert injected.node == "c-worker" and _ran(cluster, "echo applied") and not _ran(cluster, "echo reverted")
    assert _ran(cluster, "echo reverted") and injected.result["held_s"] < 30  # the block's end cut the hold short


def test_inject_reverts_when_the_block_raises(cluster: ChaoskitCluster) -> None:
    with pytest.raises(RuntimeError, match="the test failed"), cluster.inject("test.marked", duration=60):
        raise RuntimeError("the test failed")
    assert _ran(cluster, "echo reverted")


class NeverHeals(Marked):
    """Marks where it ran; its component never recovers."""

    name = "test.never-heals"
    recovery_timeout = 0.2

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return False


def test_inject_fails_the_test_when_the_component_does_not_recover(tmp_path: Path) -> None:
    load_catalog()
    catalog = CATALOG.extended(faults=[("test.never-heals", NeverHeals)])
    cluster = ChaoskitCluster("c", Env(FakeKube(), FakeNodeExec(nodes=NODES), "c"), NODES, tmp_path, catalog=catalog)
    with pytest.raises(AssertionError, match="did not recover"), cluster.inject("test.never-heals", duration=60):
        pass
    assert _ran(cluster, "echo reverted")


def test_a_failure_report_names_each_component_that_is_not_ok() -> None:
    finding = Finding(
        "failed",
        "scheduler",
        "kube-scheduler is not running",
        "its manifest is gone",
        remediation=("put the manifest back",),
    )
    found = Diagnosis(
        "c",
        (
            ComponentReport("scheduler", "c-control-plane", "failed", (finding,), ()),
            ComponentReport("etcd", "c-control-plane", "ok", (), ()),
        ),
        0.0,
        1.0,
    )
    assert diagnosis_text(found) == (
        "scheduler@c-control-plane: failed\n  [failed] kube-scheduler is not running\n"
        "    cause: its manifest is gone\n    do: put the manifest back"
    )


def test_a_failure_inside_the_block_carries_the_diagnosis_made_before_the_revert(
    cluster: ChaoskitCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    monkeypatch.setattr(cluster, "_diagnosis_text", lambda: seen.append(_ran(cluster, "echo reverted")) or "SCHED")
    with pytest.raises(AssertionError) as caught, cluster.inject("test.marked", duration=60):
        raise AssertionError("the shop stopped answering")
    assert (
        seen == [False] and "chaoskit diagnosis with test.marked in place on c-worker:\nSCHED" in caught.value.__notes__
    )
