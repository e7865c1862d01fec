"""What can go wrong in chaoskit, and which exit code each means.

ChaoskitError
 ├── UsageError           exit 2: the command line asks for something impossible
 └── ToolError            exit 4: the cluster or a tool chaoskit drives failed
      ├── CommandError        a command exited non-zero (carries a pasteable command and its output tail)
      └── MissingDependency   something chaoskit needs is absent and cannot be provided here
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

EXIT_OK = 0
EXIT_BREACHED = 1
EXIT_USAGE = 2
EXIT_INVALID_PLAYBOOK = 3
EXIT_TOOL = 4
EXIT_INTERRUPTED = 130


class ChaoskitError(Exception):
    exit_code = EXIT_TOOL


class UsageError(ChaoskitError):
    exit_code = EXIT_USAGE


class ToolError(ChaoskitError):
    exit_code = EXIT_TOOL


class MissingDependency(ToolError):
    pass


class CommandError(ToolError):
    """A command failed; the message is a command a user can paste plus what it printed last."""

    TAIL_LINES = 25

    def __init__(self, argv: Sequence[str], returncode: int, output: str, *, note: str = "") -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.output = output
        tail = "\n".join(output.rstrip().splitlines()[-self.TAIL_LINES :])
        head = f"{note}: " if note else ""
        super().__init__(
            f"{head}command failed (exit {returncode}):\n  {shlex.join(self.argv)}\n"
            + (f"--- last lines of its output ---\n{tail}" if tail else "(no output)")
        )
