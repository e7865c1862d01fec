"""The dead-man switch's script and commands, against a fake node exec."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from chaoskit.deadman import HEAL_DIR, NotRearmed, Switch, arm, armed, fire, heal, line_argv, revert_lines
from chaoskit.errors import CommandError
from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.seams.shell import Completed


def _switch() -> Switch:
    return Switch(
        "abc123",
        Node("chaoskit-worker", "worker"),
        revert_lines(["systemctl", "start", "kubelet"], ["rm", "-f", "/x y"]),
        90,
    )


def _run_script(tmp_path: Path, sw: Switch) -> subprocess.CompletedProcess[bytes]:
    """The switch's script as the node's systemd runs it, with its paths moved under tmp_path."""
    script = tmp_path / "heal.sh"
    script.write_text(sw.script().replace(HEAL_DIR, str(tmp_path)))
    return subprocess.run(["sh", str(script)], capture_output=True, timeout=30)


def test_script_runs_every_line_and_removes_itself_only_when_all_succeeded(tmp_path: Path) -> None:
    ok = Switch("t", Node("n", "worker"), (f"touch {tmp_path}/c",), 5)
    assert _run_script(tmp_path, ok).returncode == 0
    assert (tmp_path / "c").exists() and not (tmp_path / "heal.sh").exists()
    assert (tmp_path / "t.log").read_text().strip().endswith("attempt 1 exit 0")


def test_a_failing_line_is_retried_with_backoff_until_it_succeeds(tmp_path: Path) -> None:
    # the line fails until a file exists; a second line, in the background, creates it 1 s in
    obstacle = tmp_path / "gone"
    sw = Switch("t", Node("n", "worker"), (f"touch {tmp_path}/a", f"test -e {obstacle}"), 5, fault="f.x", run="/j")
    subprocess.Popen(["sh", "-c", f"sleep 1; touch {obstacle}"])
    done = _run_script(tmp_path, sw)
    assert done.returncode == 0
    attempts = [line for line in (tmp_path / "t.log").read_text().splitlines() if " attempt " in line]
    assert attempts[0].endswith("attempt 1 exit 1") and attempts[-1].endswith("exit 0")
    assert not (tmp_path / "heal.sh").exists() and not (tmp_path / "t.failed").exists()


def test_a_switch_that_gives_up_leaves_a_marker_naming_the_fault_and_run(tmp_path: Path) -> None:
    sw = Switch(
        "t",
        Node("n", "worker"),
        (f"touch {tmp_path}/a", "echo no way >&2; false", f"touch {tmp_path}/b"),
        5,
        fault="kube-proxy.slow-sync",
        run="/j/run.jsonl",
        retry_for_s=0,
    )
    assert _run_script(tmp_path, sw).returncode == 1
    assert (tmp_path / "a").exists() and (tmp_path / "b").exists(), "every line runs even after one failed"
    assert (tmp_path / "heal.sh").exists(), "a failed heal stays armed for chaoskit revert"
    marker = dict(line.split("=", 1) for line in (tmp_path / "t.failed").read_text().splitlines())
    assert marker["fault"] == "kube-proxy.slow-sync" and marker["run"] == "/j/run.jsonl"
    assert marker["attempts"] == "1" and "false" in marker["failed"]
    assert "no way" in (tmp_path / "t.log").read_text()


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


def test_heal_runs_every_line_under_a_timeout_then_disarms() -> None:
    nodes = FakeNodeExec()
    heal(nodes, _switch())
    assert nodes.calls[0] == ("chaoskit-worker", "timeout", "-k", "5", "120", "sh", "-c", "systemctl start kubelet")
    assert nodes.calls[1] == ("chaoskit-worker", *line_argv("rm -f '/x y'"))
    assert "systemctl stop chaoskit-heal-abc123.timer" in nodes.calls[2][-1]
    assert f"rm -f {HEAL_DIR}/abc123.sh" in nodes.calls[2][-1]
    assert len(nodes.calls) == 3


def test_a_failed_heal_never_disarms_and_starts_the_switch_at_once() -> None:
    nodes = FakeNodeExec()
    nodes.runner.failures[("chaoskit-worker", *line_argv("systemctl start kubelet"))] = "unit not found"
    with pytest.raises(CommandError, match="systemctl start kubelet"):
        heal(nodes, _switch())
    later = [" ".join(c) for c in nodes.calls[2:]]
    assert not any(f"rm -f {HEAL_DIR}/abc123.sh" in c for c in later), "the script must stay"
    assert any(f"cat > {HEAL_DIR}/abc123.sh" in c for c in later), "the script is written again (it may be gone)"
    assert any("systemd-run" in c and "--on-active=1s" in c for c in later), "and started within a second"


def test_armed_lists_scripts_left_on_the_node() -> None:
    nodes = FakeNodeExec()
    nodes.runner.responses[("chaoskit-worker", "sh")] = "abc.sh\nother.txt\ndef.sh\n"
    assert armed(nodes, Node("chaoskit-worker", "worker")) == ["abc", "def"]


def test_fire_starts_now_only_the_switches_of_the_lost_run(tmp_path: Path) -> None:
    heal = tmp_path / "heal"
    heal.mkdir()
    for sid, run in (("aaa", "/j/run-1.jsonl"), ("bbb", "/j/run-2.jsonl")):
        (heal / f"{sid}.sh").write_text(Switch(sid, Node("n", "worker"), ("true",), 60, fault="f", run=run).script())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/started\n')
    (bin_dir / "systemctl").chmod(0o755)

    class Local:
        def run(self, node: Node, argv: list[str], **_: object) -> Completed:
            script = argv[2].replace(HEAL_DIR, str(heal))
            done = subprocess.run(
                ["sh", "-c", script],
                capture_output=True,
                text=True,
                env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
            )
            return Completed(tuple(argv), done.returncode, done.stdout, done.stderr)

    assert fire(Local(), Node("n", "worker"), "/j/run-1.jsonl") == ["aaa"]  # type: ignore[arg-type]
    assert (tmp_path / "started").read_text().split() == ["start", "--no-block", "chaoskit-heal-aaa.service"]


def test_a_failed_heal_whose_switch_cannot_be_armed_again_says_so() -> None:
    nodes = FakeNodeExec()
    nodes.runner.failures[("chaoskit-worker", *line_argv("systemctl start kubelet"))] = "unit not found"
    nodes.runner.failures[("chaoskit-worker", "systemd-run")] = "Failed to start transient timer unit"
    with pytest.raises(NotRearmed, match="could not be armed again") as raised:
        heal(nodes, _switch())
    assert "systemctl start kubelet" in str(raised.value), "the line that failed is named too"


def test_a_line_chaoskit_stops_waiting_for_is_a_failed_line_not_a_crash() -> None:
    class Hanging(FakeNodeExec):
        def run(self, node: Node, argv: object, **kw: object) -> Completed:
            if kw.get("timeout"):
                raise CommandError(["docker", "exec"], -1, "", note="timed out after 135s")
            return super().run(node, argv, **kw)  # type: ignore[arg-type]

    nodes = Hanging()
    with pytest.raises(CommandError, match="no answer within 120s"):
        heal(nodes, _switch())
