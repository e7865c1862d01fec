"""Every revert fails closed: each fault's plan ends its revert with verify lines that fail while the fault holds and
when their tool cannot answer, `register` refuses a fault without them, and the sabotage control (`undo_removed`) is
the verify lines alone."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import ClassVar

import pytest
from click.testing import CliRunner
from pydantic import BaseModel

import chaoskit.cli.faults as cmd
from chaoskit.cli import cli
from chaoskit.deadman import line_argv
from chaoskit.env import Env
from chaoskit.faults.base import Fault, FaultPlan, IncompleteFault, Named, NoOpControl, register
from chaoskit.faults.kube_proxy import SlowSyncParams
from chaoskit.faults.scheduler import UnschedulableParams
from chaoskit.journal import Injection, Journal
from chaoskit.model.params import NoParams
from chaoskit.registry import FAULTS, load_catalog
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import VERIFY_TRIES, FakeNodeExec, Node

load_catalog()
CATALOG = [cls() for _, cls in FAULTS.items()]
VARIANTS = [
    *((FAULTS.get("scheduler.unschedulable")(), UnschedulableParams(reason=r)) for r in ("taint", "affinity")),
    (FAULTS.get("kube-proxy.slow-sync")(), SlowSyncParams(min_sync_period=90)),
]
# Tools a verify line may ask, each failing here as a tool that cannot answer does (no API server, no lock, no /proc):
# with its error status, not one that answers (pgrep's 1 says "none running", so its error is 3)
TOOLS = {"kubectl": 1, "iptables": 4, "nft": 1, "systemctl": 1, "pgrep": 3, "ps": 1, "openssl": 1, "curl": 7}
# A verify line the shell answers alone, from a file's absence: no tool of its own to fail.
READ_BY_THE_SHELL = {"kubelet.disk-pressure"}


def _plans() -> list[tuple[str, FaultPlan]]:
    plans = [(f.name, f.plan(Node("chaoskit-worker", "worker"), f.Params())) for f in CATALOG]
    return plans + [(f"{f.name} {p}", f.plan(Node("chaoskit-control-plane", "control-plane"), p)) for f, p in VARIANTS]  # type: ignore[attr-defined]


PLANS = _plans()


@pytest.mark.parametrize(("name", "plan"), PLANS, ids=[n for n, _ in PLANS])
def test_every_plan_reverts_by_undoing_then_verifying(name: str, plan: FaultPlan) -> None:
    assert plan.undo and plan.verify, name
    assert plan.revert == plan.undo + plan.verify
    for line in plan.verify:
        assert subprocess.run(["sh", "-n", "-c", line]).returncode == 0, line
        assert not re.search(r"\bexit\b", line), "the dead-man switch runs every line in one script"
    sabotaged = plan.undo_removed()
    assert sabotaged.revert == plan.verify and sabotaged.apply == plan.apply and sabotaged.setup == plan.setup
    assert plan.steps()["verify"] == list(plan.verify) and plan.steps()["undo"] == list(plan.undo)


def _failing_tools(tmp_path: Path) -> dict[str, str]:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool, status in TOOLS.items():
        (bin_ / tool).write_text(f"#!/bin/sh\necho '{tool}: cannot answer' >&2\nexit {status}\n")
        (bin_ / tool).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}"}


def _no_wait(line: str) -> str:
    """The line asking its tools once where it would wait for them to answer."""
    return f"{VERIFY_TRIES}=1; {line}"  # as the hold's ask sets it


@pytest.mark.parametrize(("name", "plan"), PLANS, ids=[n for n, _ in PLANS])
def test_a_verify_line_whose_tool_cannot_answer_fails(name: str, plan: FaultPlan, tmp_path: Path) -> None:
    if name in READ_BY_THE_SHELL:
        pytest.skip("read by the shell alone: a file's absence")
    env = _failing_tools(tmp_path)
    done = [
        subprocess.run(["sh", "-c", _no_wait(line)], env=env, capture_output=True, timeout=60) for line in plan.verify
    ]
    assert all(d.returncode != 0 for d in done), f"{name}: a verify line passed with no tool answering"


class Unverified(Fault):
    """A fault whose revert cannot tell whether it worked."""

    name = "test.unverified"
    component = "test"
    named = Named("test", "x")
    no_op = NoOpControl(wait=1.0)
    verify: ClassVar[tuple[str, ...]] = ()

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        return FaultPlan(self.name, node, apply=("break",), undo=("heal",), verify=self.verify, summary="s")

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return False

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return True


def test_register_refuses_a_fault_whose_plan_has_no_verify_line() -> None:
    with pytest.raises(IncompleteFault, match="verify line"):
        register(Unverified)
    assert "test.unverified" not in FAULTS


def test_register_refuses_a_fault_that_cannot_plan_with_its_default_params() -> None:
    class Unplannable(Unverified):
        name = "test.unplannable"

        def plan(self, node: Node, params: BaseModel) -> FaultPlan:
            raise KeyError(node)

    with pytest.raises(IncompleteFault, match="cannot plan with its default params"):
        register(Unplannable)
    assert "test.unplannable" not in FAULTS


def test_register_plans_on_a_placeholder_node_with_the_default_params(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Node, BaseModel]] = []

    class Verified(Unverified):
        name = "test.verified"
        verify = ("healed",)

        def plan(self, node: Node, params: BaseModel) -> FaultPlan:
            seen.append((node, params))
            return super().plan(node, params)

    monkeypatch.setattr(FAULTS, "add", lambda name, cls: None)  # the real catalog stays as it is
    assert register(Verified) is Verified
    assert seen == [(Node("chaoskit-placeholder", Verified.target_role), NoParams())]


def _journal_reverted(tmp_path: Path) -> Path:
    journal = Journal(tmp_path / "run.jsonl")
    journal.injection(
        Injection("aaa", "kubelet.stop", "chaoskit-worker", ("start", "active?"), 0.0, verify=("active?",))
    )
    journal.append("reverted", id="aaa")
    return journal.path


def test_chaoskit_revert_reports_a_reverted_fault_that_still_holds_and_exits_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nodes = FakeNodeExec()
    nodes.runner.failures[("chaoskit-worker", *line_argv("active?"))] = "kubelet is not active"
    monkeypatch.setattr(cmd, "cluster_env", lambda *_: Env(FakeKube(), nodes, "chaoskit"))
    done = CliRunner().invoke(cli, ["revert", str(_journal_reverted(tmp_path))])
    assert done.exit_code == 4, done.output
    assert "still holds, though journaled reverted: kubelet.stop on chaoskit-worker (aaa)" in done.output
    nodes.runner.failures.clear()
    done = CliRunner().invoke(cli, ["revert", str(_journal_reverted(tmp_path / "again"))])
    assert done.exit_code == 0 and "verified 1 reverted injection(s): none holds" in done.output, done.output
