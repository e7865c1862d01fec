"""chaoskit.errors: exit codes and the pasteable CommandError message."""

from __future__ import annotations

import shlex

import pytest

from chaoskit.errors import EXIT_TOOL, EXIT_USAGE, CommandError, MissingDependency, ToolError, UsageError
from chaoskit.seams.shell import FakeRunner

ARGV = ["kubectl", "apply", "-f", "my manifests/web.yaml", "--selector=app=$(web)"]


def _command_line(message: str) -> str:
    return message.splitlines()[1].strip()


def test_command_error_message_holds_a_shell_pasteable_command() -> None:
    err = CommandError(ARGV, 1, "error: boom\n")
    line = _command_line(str(err))
    assert line == shlex.join(ARGV)
    assert shlex.split(line) == ARGV


def test_command_error_keeps_only_the_last_25_lines_of_output() -> None:
    output = "".join(f"line-{i:02d}\n" for i in range(1, 41))
    message = str(CommandError(ARGV, 2, output))

    assert "exit 2" in message
    assert "line-15" not in message
    tail = message.split("--- last lines of its output ---\n", 1)[1]
    assert tail.splitlines() == [f"line-{i:02d}" for i in range(16, 41)]
    assert CommandError(ARGV, 2, output).output == output  # the whole output stays available


def test_command_error_without_output_says_so() -> None:
    assert str(CommandError(["true"], 1, "  \n")).endswith("(no output)")


def test_command_error_note_prefixes_the_message() -> None:
    message = str(CommandError(["kind"], 127, "", note="program not found"))
    assert message.startswith("program not found: command failed (exit 127):")


def test_fake_runner_raises_command_error_for_failures() -> None:
    runner = FakeRunner(failures={("docker",): "daemon down"})
    with pytest.raises(CommandError) as info:
        runner.run(["docker", "ps"])
    assert info.value.argv == ["docker", "ps"]
    assert info.value.returncode == 1
    assert "daemon down" in str(info.value)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (UsageError("x"), EXIT_USAGE),
        (ToolError("x"), EXIT_TOOL),
        (MissingDependency("x"), EXIT_TOOL),
        (CommandError(["x"], 1, ""), EXIT_TOOL),
    ],
)
def test_exit_codes(error: Exception, code: int) -> None:
    assert error.exit_code == code  # type: ignore[attr-defined]
