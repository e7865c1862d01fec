"""What can go wrong in chaoskit, and which exit code each means: every exception chaoskit defines is drawn here
(a unit test holds the drawing to the code), with the module it lives in when that is not this one.

ChaoskitError                    exit 4 unless it says otherwise
 ├── UsageError                  exit 2: the command line asks for something impossible
 │    ├── UnknownName            exit 2: a name no registry knows (suggests close matches)
 │    ├── NotOurCluster          exit 2 (safety): a cluster chaoskit does not recognise, not allowed
 │    └── JournalError           exit 2 (exporters.prometheus): a run journal that cannot be read
 ├── PlaybookError               exit 3: an invalid playbook (every Problem, each at file:line:col)
 ├── DuplicateName               exit 4: two classes registered under one name (a bug)
 ├── ApiUnavailable              exit 4 (diagnosers.kit.sources): no answer from the API server in time
 └── ToolError                   exit 4: the cluster or a tool chaoskit drives failed
      ├── CommandError           exit 4: a command failed (a command to paste and its output's tail)
      ├── MissingDependency      exit 4: something chaoskit needs is absent and cannot be had here
      ├── KubeError              exit 4 (seams.kube): the API refused (`status`) or did not answer
      │    ├── NotFound          exit 4: HTTP 404 (find and delete take it as an answer)
      │    ├── Forbidden         exit 4: HTTP 403
      │    └── Conflict          exit 4: HTTP 409 (a name taken: a lock held, an object there)
      ├── ScrapeError            exit 4 (seams.scrape): /metrics refused (`status`), silent or not metrics
      ├── InjectError            exit 4 (engine): a setup or apply line failed, or the fact check could not tell
      ├── HandoffError           exit 4 (faults.base): a file made on another node could not be handed over
      ├── NotRearmed             exit 4 (deadman): a revert failed, and its switch could not be armed again
      ├── ProxyModeUnsupported   exit 4 (components.kube_proxy): the kernel lacks what a mode needs
      ├── ProbeError             exit 4 (probes.base): a probe could not start
      ├── Locked                 exit 4 (safety): another run holds the component's lease
      ├── PrometheusError        exit 4 (cluster.prometheus.server): the Prometheus chaoskit runs failed
      └── MissingPiece           exit 4 (measurements.base): a measurement lacks what it reads

Refusals that never leave chaoskit as such, so no exit of their own:

TypeError
 └── IncompleteFault             (faults.base): a fault without its own checks, `named`, `no_op` or verify line
ValueError
 ├── DurationError               (model.duration): a bad duration, reported as a playbook problem
 ├── NotStructural               (playbook.openapi): a model the CRD schema generator has no structural form for
 └── CronError                   (chaoskit_operator.cron): a bad cron schedule, reported as a ChaosSchedule problem
Exception
 ├── _Problem                    (model.promql): a bad PromQL expression, reported as a playbook problem
 └── Refused                     (seams.kubeget): an answer of 400 or more, raised on as KubeError (seams.kube)
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
