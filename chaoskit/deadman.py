"""The dead-man switch: a revert armed inside the node before a fault is applied.

Arming writes the revert as a shell script on the node's persistent /var and starts a transient systemd timer
that runs it at the deadline. The script runs every revert line; if one fails it tries them all again with
backoff (RETRY_FIRST_S doubling up to RETRY_MAX_S) for up to RETRY_FOR_S, so a revert that needs something
still broken (the API server another fault stopped, a read-only filesystem) heals once that comes back, with or
without chaoskit. Only when every line succeeded does it remove itself; when it gives up it leaves
HEAL_DIR/<id>.failed, which `chaoskit diagnose` reports.

chaoskit disarms a switch only after its own revert succeeded; a failed revert starts the switch at once instead.
"""

from __future__ import annotations

import os
import shlex
import signal
from collections.abc import Sequence
from dataclasses import dataclass

from chaoskit.errors import ChaoskitError, CommandError, ToolError
from chaoskit.seams.nodeexec import Node, NodeExec

HEAL_DIR = "/var/lib/chaoskit/heal"
RETRY_FIRST_S = 2  # the first retry comes this soon after a failed attempt...
RETRY_MAX_S = 10  # ...each wait doubles up to this (a revert waiting on a component heals within 10 s of its return)...
RETRY_FOR_S = 1800  # ...and after this long the switch gives up and leaves <id>.failed on the node
LINE_TIMEOUT_S = 120  # one revert line may hang (kubectl against a hung API server): it is cut off and retried


@dataclass(frozen=True)
class Switch:
    """One armed revert on one node."""

    id: str  # unique per injection; names the unit and the script
    node: Node
    revert: tuple[str, ...]  # shell lines, run in order; each must be idempotent
    deadline_s: float  # seconds from arming until the node heals itself
    fault: str = ""  # what the give-up marker names
    run: str = ""  # the run's journal, for `chaoskit revert`
    retry_for_s: int = RETRY_FOR_S

    @property
    def unit(self) -> str:
        return f"chaoskit-heal-{self.id}"

    @property
    def script_path(self) -> str:
        return f"{HEAL_DIR}/{self.id}.sh"

    @property
    def log_path(self) -> str:
        return f"{HEAL_DIR}/{self.id}.log"

    @property
    def failed_path(self) -> str:
        return f"{HEAL_DIR}/{self.id}.failed"

    def script(self) -> str:
        # Every line runs even if an earlier one fails: a partial heal beats none. Each attempt runs them all again.
        lines = "\n".join(
            f'  timeout -k 5 {LINE_TIMEOUT_S} sh -c {shlex.quote(line)} >>"$log" 2>&1 || {{ status=1; '
            f"failed={shlex.quote(line[:200])}; }}"
            for line in self.revert
        )
        marker = shlex.quote(f"fault={self.fault}\ninjection={self.id}\nrun={self.run}\n")
        return f"""#!/bin/sh
# chaoskit heal {self.id} on {self.node.name}: {self.fault}, run {self.run}
log={self.log_path}
give_up_at=$(( $(date +%s) + {self.retry_for_s} ))
delay={RETRY_FIRST_S}
attempt=0
while :; do
  attempt=$((attempt + 1))
  status=0
  failed=
{lines}
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) attempt $attempt exit $status" >>"$log"
  if [ $status -eq 0 ]; then
    rm -f "$0" {self.failed_path}
    find {HEAL_DIR} -name '*.log' -mtime +7 -delete 2>/dev/null  # logs of switches that healed unattended
    systemctl stop {self.unit}.timer 2>/dev/null
    exit 0
  fi
  if [ "$(date +%s)" -ge "$give_up_at" ]; then
    {{ printf '%s' {marker}; echo "attempts=$attempt"; echo "at=$(date -u +%Y-%m-%dT%H:%M:%SZ)";
      echo "failed=$failed"; }} > {self.failed_path}
    exit 1
  fi
  sleep $delay
  delay=$((delay * 2))
  [ $delay -gt {RETRY_MAX_S} ] && delay={RETRY_MAX_S}
done
"""

    def arm_argv(self, after_s: float | None = None) -> list[str]:
        seconds = max(1, round(self.deadline_s if after_s is None else after_s))
        return [
            "systemd-run",
            f"--unit={self.unit}",
            f"--on-active={seconds}s",
            "--timer-property=AccuracySec=1s",
            "--description=chaoskit dead-man switch",
            "/bin/sh",
            self.script_path,
        ]

    def stop_units(self) -> str:
        """Stop the timer and any attempt in flight, and forget them, so the unit name can be armed again."""
        units = f"{self.unit}.timer {self.unit}.service"
        return f"systemctl stop {units} 2>/dev/null; systemctl reset-failed {units} 2>/dev/null; true"

    def disarm_argv(self) -> list[str]:
        # only after a revert that succeeded: nothing of this switch is left on the node
        return ["sh", "-c", f"{self.stop_units()}; rm -f {self.script_path} {self.log_path} {self.failed_path}"]


def kill_point(name: str) -> None:
    """Tests SIGKILL chaoskit at an exact point of the run loop (CHAOSKIT_TEST_KILL_AT=<name>) to prove the switch
    heals whatever that point left; nothing else sets the variable. The points: journaled, armed, applied-N (after
    the N-th apply line), holding (effect seen), reverting (after the first revert line)."""
    if os.environ.get("CHAOSKIT_TEST_KILL_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def arm(nodes: NodeExec, switch: Switch, after_s: float | None = None) -> None:
    """Install the heal script and start its timer; the fault may only be applied after this returns."""
    nodes.run(switch.node, ["mkdir", "-p", HEAL_DIR])
    nodes.run(switch.node, ["sh", "-c", f"cat > {shlex.quote(switch.script_path)}"], input=switch.script().encode())
    nodes.run(switch.node, switch.arm_argv(after_s))


class NotRearmed(ToolError):
    """A revert failed, and the switch could not be armed again to retry it: nothing on the node retries it."""


def line_argv(line: str) -> list[str]:
    """One revert line as chaoskit runs it on the node: cut off there after LINE_TIMEOUT_S, as the switch does."""
    return ["timeout", "-k", "5", str(LINE_TIMEOUT_S), "sh", "-c", line]


def run_line(nodes: NodeExec, node: Node, line: str) -> CommandError | None:
    """Run one revert line on `node`; the error when it failed or hung, None when it succeeded."""
    argv = line_argv(line)
    try:  # chaoskit stops waiting a little after the node's own `timeout` would have cut the line off
        done = nodes.run(node, argv, check=False, timeout=LINE_TIMEOUT_S + 15)
    except CommandError as exc:
        return CommandError(
            argv, exc.returncode, exc.output, note=f"on {node.name}: no answer within {LINE_TIMEOUT_S}s"
        )
    if done.returncode != 0:
        return CommandError(argv, done.returncode, done.output, note=f"on {node.name}")
    return None


def first_failure(nodes: NodeExec, node: Node, lines: Sequence[str]) -> CommandError | None:
    """Run every line on `node` (a partial heal beats none); the first line's error, or None when all succeeded."""
    failures = []
    for i, line in enumerate(lines):
        if i == 1:
            kill_point("reverting")
        if (failed := run_line(nodes, node, line)) is not None:
            failures.append(failed)
    return failures[0] if failures else None


def heal(nodes: NodeExec, switch: Switch) -> None:
    """Revert now with the lines the switch would run; disarm the switch only if every line succeeded.

    When a line fails the switch is (re)armed to start retrying on the node at once, and the CommandError of the
    first failed line is raised after trying them all; NotRearmed when the switch could not be armed again.
    """
    failed = first_failure(nodes, switch.node, switch.revert)
    if failed is None:
        nodes.run(switch.node, switch.disarm_argv(), check=False)
        return
    nodes.run(switch.node, ["sh", "-c", switch.stop_units()], check=False)
    try:
        arm(nodes, switch, after_s=1)  # the script again: it may be gone if the switch already ran or gave up
    except ChaoskitError as exc:
        raise NotRearmed(f"{failed}\nand the dead-man switch could not be armed again to retry it: {exc}") from exc
    raise failed


def armed(nodes: NodeExec, node: Node) -> list[str]:
    """IDs of switches still armed on a node (not yet healed, or given up)."""
    out = nodes.run(node, ["sh", "-c", f"ls {HEAL_DIR} 2>/dev/null || true"]).stdout
    return sorted(name.removesuffix(".sh") for name in out.split() if name.endswith(".sh"))


def fire(nodes: NodeExec, node: Node, run: str) -> list[str]:
    """Start now, without waiting for their deadlines, the switches a run armed on a node; their IDs.

    What recovery falls back on when the run's journal is lost: the node still holds each revert it armed."""
    header = shlex.quote(f" run {run}")
    script = (
        f'for f in {HEAL_DIR}/*.sh; do [ -e "$f" ] || continue; head -n 2 "$f" | grep -qF -- {header} || '
        f'continue; id=$(basename "$f" .sh); systemctl start --no-block chaoskit-heal-$id.service && '
        f"echo $id; done"
    )
    return nodes.run(node, ["sh", "-c", script], check=False).stdout.split()


def attempts(nodes: NodeExec, switch: Switch) -> list[str]:
    """The switch's own record of its attempts on the node ("<time> attempt N exit S"), oldest first."""
    out = nodes.run(switch.node, ["sh", "-c", f"cat {switch.log_path} 2>/dev/null || true"]).stdout
    return [line for line in out.splitlines() if " attempt " in line]


def revert_lines(*argvs: Sequence[str]) -> tuple[str, ...]:
    """Shell lines from argv lists, quoted."""
    return tuple(shlex.join(a) for a in argvs)
