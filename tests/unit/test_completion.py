"""`chaoskit completion SHELL` prints the shell's script; fault and component arguments complete from the catalog."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.shell_completion import ShellComplete
from click.testing import CliRunner

from chaoskit.cli import cli
from chaoskit.cli.complete import complete_component, complete_fault


@pytest.mark.parametrize(
    ("shell", "marker"),
    [("bash", "complete -o nosort -F"), ("zsh", "#compdef chaoskit"), ("fish", "complete --no-files --command")],
)
def test_the_completion_script_of_each_shell_is_printed(shell: str, marker: str) -> None:
    result = CliRunner().invoke(cli, ["completion", shell])
    assert result.exit_code == 0, result.output
    assert marker in result.output
    assert "_CHAOSKIT_COMPLETE" in result.output


def test_an_unknown_shell_is_a_usage_error() -> None:
    assert CliRunner().invoke(cli, ["completion", "tcsh"]).exit_code == 2


def _param() -> click.Parameter:
    return click.Argument(["x"])


def test_a_fault_prefix_completes_to_that_components_faults() -> None:
    names = [c.value for c in complete_fault(click.Context(cli), _param(), "scheduler.")]
    assert names == ["scheduler.down", "scheduler.unschedulable"]


def test_a_component_prefix_completes_to_the_components_diagnose_judges() -> None:
    names = [c.value for c in complete_component(click.Context(cli), _param(), "kube")]
    assert set(names) == {"kubelet", "kube-proxy"}


@pytest.mark.parametrize(
    ("args", "incomplete", "expected"),
    [
        (["inject"], "scheduler.", {"scheduler.down", "scheduler.unschedulable"}),
        (["faults", "describe"], "dns.", {"dns.down", "dns.misconfigured"}),
        (["diagnose"], "etc", {"etcd"}),
    ],
)
def test_the_commands_arguments_complete_through_click(args: list[str], incomplete: str, expected: set[str]) -> None:
    completions = ShellComplete(cli, {}, "chaoskit", "_CHAOSKIT_COMPLETE").get_completions(args, incomplete)
    assert {c.value for c in completions} == expected


def test_without_a_cluster_to_ask_a_node_completes_to_the_roles(tmp_path: Path) -> None:
    args = ["--kubeconfig", str(tmp_path / "none"), "inject", "kubelet.stop", "--node"]
    completions = ShellComplete(cli, {}, "chaoskit", "_CHAOSKIT_COMPLETE").get_completions(args, "")
    assert [c.value for c in completions] == ["control-plane", "worker"]
