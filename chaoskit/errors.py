"""What can go wrong in chaoskit, and which exit code each means.

ChaoskitError
 ├── UsageError           exit 2: the command line asks for something impossible
 │    └── UnknownName         a fault, check or measurement name no registry knows (suggests close matches)
 ├── PlaybookError        exit 3: a playbook is invalid (carries every Problem, each located file:line:col)
 ├── DuplicateName        exit 4: two classes registered under one name (a bug in chaoskit or a plugin)
 └── ToolError            exit 4: the cluster or a tool chaoskit drives failed
      ├── CommandError        a command exited non-zero (carries a pasteable command and its output tail)
      └── MissingDependency   something chaoskit needs is absent and cannot be provided here
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

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


class UnknownName(UsageError):
    """A name looked up in a registry that holds no such name; the message suggests close matches."""

    def __init__(self, kind: str, name: str, suggestions: Sequence[str], known: Sequence[str]) -> None:
        self.kind = kind
        self.name = name
        self.suggestions = list(suggestions)
        if self.suggestions:
            hint = "did you mean " + " or ".join(f"{s!r}" for s in self.suggestions) + "?"
        elif known:
            hint = f"known {kind}s: " + ", ".join(known)
        else:
            hint = f"no {kind}s are registered"
        super().__init__(f"unknown {kind} {name!r}; {hint}")


class DuplicateName(ChaoskitError):
    """Two classes claimed one registry name: whichever came second would silently shadow the first."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a playbook, where an editor can jump to it (1-based line and column)."""

    file: str
    line: int
    col: int
    path: str  # dotted path in the document, e.g. spec.steps[0].duration; "" for the whole file
    message: str

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{self.file}:{self.line}:{self.col}: {where}{self.message}"


class PlaybookError(ChaoskitError):
    """A playbook failed to load; carries every problem found, not only the first."""

    exit_code = EXIT_INVALID_PLAYBOOK

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        head = f"invalid playbook ({count} problem{'s' if count != 1 else ''}):"
        super().__init__("\n".join([head, *(f"  {p}" for p in self.problems)]))


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
