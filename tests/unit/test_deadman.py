"""The dead-man switch's script and commands, against a fake node exec."""

from __future__ import annotations

import subprocess

import pytest

from chaoskit.cluster.nodeexec import FakeNodeExec
from chaoskit.errors import CommandError
from chaoskit.faults.deadman import HEAL_DIR, Switch, arm, armed, heal, revert_lines


def _switch() -> Switch:
    return Switch(
        "abc123", "chaoskit-worker", revert_lines(["systemctl", "start", "kubelet"], ["rm", "-f", "/x y"]), 90
    )


def test_script_runs_every_revert_line_and_removes_itself_only_on_success(tmp_path) -> None:  # type: ignore[no-untyped-def]
    sw = Switch("t", "n", (f"touch {tmp_path}/a", "false", f"touch {tmp_path}/b"), 5)
    script = tmp_path / "heal.sh"
    script.write_text(sw.script())
    done = subprocess.run(["sh", str(script)], capture_output=True)
    assert done.returncode == 1
    assert (tmp_path / "a").exists() and (tmp_path / "b").exists()
    assert script.exists(), "a failed heal must stay for chaoskit revert"
    ok = Switch("t", "n", (f"touch {tmp_path}/c",), 5)
    script.write_text(ok.script())
    assert subprocess.run(["sh", str(script)]).returncode == 0
    assert not script.exists()


def test_revert_lines_quote_arguments() -> None:
    assert revert_lines(["rm", "-f", "/x y"]) == ("rm -f '/x y'",)


def test_arm_writes_the_script_then_starts_a_timer_at_the_deadline() -> None:
    nodes = FakeNodeExec()
    sw = _switch()
    arm(nodes, sw)
    assert nodes.calls[0] == ("chaoskit-worker", "mkdir", "-p", HEAL_DIR)
    assert nodes.calls[1][-1] == f"cat > {HEAL_DIR}/abc123.sh"
    timer = nodes.calls[2]
    assert timer[1] == "systemd-run"
    assert "--unit=chaoskit-heal-abc123" in timer and "--on-active=90s" in timer
    assert timer[-2:] == ("/bin/sh", f"{HEAL_DIR}/abc123.sh")


def test_heal_runs_the_script_then_stops_the_timer() -> None:
    nodes = FakeNodeExec()
    heal(nodes, _switch())
    assert nodes.calls[0] == ("chaoskit-worker", "sh", "-c", "systemctl start kubelet")
    assert nodes.calls[1] == ("chaoskit-worker", "sh", "-c", "rm -f '/x y'")
    assert "systemctl stop chaoskit-heal-abc123.timer" in nodes.calls[2][-1]


def test_heal_tries_every_line_and_disarms_even_when_one_fails() -> None:
    nodes = FakeNodeExec()
    nodes.runner.failures[("chaoskit-worker", "sh", "-c", "systemctl start kubelet")] = "unit not found"
    with pytest.raises(CommandError, match="systemctl start kubelet"):
        heal(nodes, _switch())
    assert len(nodes.calls) == 3


def test_armed_lists_scripts_left_on_the_node() -> None:
    nodes = FakeNodeExec()
    nodes.runner.responses[("chaoskit-worker", "sh")] = "abc.sh\nother.txt\ndef.sh\n"
    assert armed(nodes, "chaoskit-worker") == ["abc", "def"]
