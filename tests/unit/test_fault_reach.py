"""Where chaoskit's agents reach no control-plane node, its faults are refused with the reason before anything is
injected, and `faults list --cluster` says which faults it can inject there."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import chaoskit.cli.faults as cmd
from chaoskit.cli import cli
from chaoskit.errors import UsageError
from chaoskit.seams.nodeexec import Node, pick

WORKERS = [Node("w1", "worker"), Node("w2", "worker")]


def test_a_control_plane_fault_with_no_agent_there_is_refused_with_the_reason() -> None:
    with pytest.raises(UsageError, match="no control-plane node chaoskit can reach .*nothing was injected") as err:
        pick(WORKERS, None, "control-plane")
    assert err.value.exit_code == 2
    assert pick(WORKERS, None, "worker").name == "w1"


def test_faults_list_for_a_cluster_says_which_it_can_inject_there(monkeypatch: pytest.MonkeyPatch) -> None:
    class Agents:
        def list_nodes(self) -> list[Node]:
            return WORKERS

    monkeypatch.setattr(cmd, "node_exec", lambda *_: Agents())
    done = CliRunner().invoke(cli, ["faults", "list", "--cluster", "managed", "-o", "json"])
    assert done.exit_code == 0, done.output
    here = {item["name"]: item["here"] for item in json.loads(done.output)["items"]}
    assert here["apiserver.down"] == "no: no chaoskit agent on a control-plane node"
    assert here["kubelet.stop"] == "yes"


def test_a_bad_param_is_said_in_chaoskit_words_with_the_parameter_table_before_any_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_cluster(*_: object, **__: object) -> None:
        raise AssertionError("the cluster was reached")

    monkeypatch.setattr(cmd, "node_exec", no_cluster)
    args = ["inject", "scheduler.unschedulable", "--cluster", "lab", "--param", "reason=nope", "--param", "x=1"]
    done = CliRunner().invoke(cli, [*args, "--dry-run"])
    assert isinstance(done.exception, UsageError) and done.exception.exit_code == 2
    said = str(done.exception)
    assert "reason=nope: not one of: resources, taint, affinity" in said and "x: no such parameter" in said
    assert "PARAMETER" in said and "replicas" in said and "integer 1..20" in said
    assert "validation error" not in said and "pydantic" not in said
