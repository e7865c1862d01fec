"""Fault plans are exact, pure and reversible: what --dry-run shows is what runs."""

from __future__ import annotations

import subprocess

import pytest

from chaoskit.faults.base import Fault, NoParams
from chaoskit.faults.controller_manager import ControllerManagerDown, ControllerManagerHung
from chaoskit.faults.kube_proxy import KubeProxyFrozen
from chaoskit.faults.kubelet import ContainerRuntimeUnresponsive, KubeletStopped
from chaoskit.faults.scheduler import SchedulerDown

ALL = [SchedulerDown(), ControllerManagerDown(), ControllerManagerHung(), KubeletStopped(),
       ContainerRuntimeUnresponsive(), KubeProxyFrozen()]  # fmt: skip


@pytest.mark.parametrize("fault", ALL, ids=lambda f: f.name)
def test_every_plan_names_its_fault_and_node_and_has_a_revert(fault: Fault) -> None:
    plan = fault.plan("chaoskit-worker", NoParams())
    assert plan.fault == fault.name and plan.node == "chaoskit-worker"
    assert plan.apply and plan.revert and plan.summary
    assert fault.name.split(".")[0] == fault.component


@pytest.mark.parametrize("fault", ALL, ids=lambda f: f.name)
def test_every_line_is_valid_shell(fault: Fault) -> None:
    plan = fault.plan("n", NoParams())
    for line in plan.apply + plan.revert:
        assert subprocess.run(["sh", "-n", "-c", line]).returncode == 0, line


def test_scheduler_down_parks_the_static_pod_manifest_and_puts_it_back() -> None:
    plan = SchedulerDown().plan("chaoskit-control-plane", NoParams())
    assert (
        plan.apply[-1]
        == "mv /etc/kubernetes/manifests/kube-scheduler.yaml /etc/kubernetes/chaoskit-parked/kube-scheduler.yaml"
    )
    assert (
        "mv /etc/kubernetes/chaoskit-parked/kube-scheduler.yaml /etc/kubernetes/manifests/kube-scheduler.yaml"
        in plan.revert[0]
    )


def test_static_pod_revert_is_idempotent(tmp_path) -> None:  # type: ignore[no-untyped-def]
    plan = SchedulerDown().plan("n", NoParams())
    revert = plan.revert[0].replace("/etc/kubernetes", str(tmp_path))
    (tmp_path / "chaoskit-parked").mkdir()
    (tmp_path / "manifests").mkdir()
    (tmp_path / "chaoskit-parked" / "kube-scheduler.yaml").write_text("x")
    for _ in range(2):  # the dead-man switch may run after a manual revert
        assert subprocess.run(["sh", "-c", revert]).returncode == 0
    assert (tmp_path / "manifests" / "kube-scheduler.yaml").read_text() == "x"


def test_frozen_processes_are_stopped_and_continued_by_exact_name() -> None:
    plan = KubeProxyFrozen().plan("chaoskit-worker", NoParams())
    assert plan.apply == ("pkill -STOP -x kube-proxy",)
    assert plan.revert == ("pkill -CONT -x kube-proxy || true",)


def test_long_process_names_are_matched_by_their_15_character_kernel_name() -> None:
    plan = ControllerManagerHung().plan("chaoskit-control-plane", NoParams())
    assert plan.apply == ("pkill -STOP -x kube-controller",)
