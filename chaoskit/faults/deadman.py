"""The dead-man switch: a revert armed inside the node before a fault is applied.

Arming writes the revert as a shell script on the node's persistent /var and
starts a transient systemd timer that runs it at the deadline. A normal revert
runs the same script and disarms the timer. If chaoskit is killed (even with
SIGKILL) the node heals itself when the timer fires: nothing is left broken.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from chaoskit.cluster.nodeexec import NodeExec
from chaoskit.errors import CommandError

HEAL_DIR = "/var/lib/chaoskit/heal"


@dataclass(frozen=True)
class Switch:
    """One armed revert on one node."""

    id: str  # unique per injection; names the unit and the script
    node: str
    revert: tuple[str, ...]  # shell lines, run in order with `set -x`; each must be idempotent
    deadline_s: float  # seconds from arming until the node heals itself

    @property
    def unit(self) -> str:
        return f"chaoskit-heal-{self.id}"

    @property
    def script_path(self) -> str:
        return f"{HEAL_DIR}/{self.id}.sh"

    def script(self) -> str:
        # Every line runs even if an earlier one fails: a partial heal beats none.
        body = "\n".join(f"{line} || status=1" for line in self.revert)
        # it removes itself only when every line succeeded, so a failed heal stays visible to `chaoskit revert`
        return (
            f"#!/bin/sh\n# chaoskit heal {self.id} on {self.node}\nstatus=0\nset -x\n{body}\n"
            f'[ $status -eq 0 ] && rm -f "$0"\nexit $status\n'
        )

    def arm_argv(self) -> list[str]:
        return [
            "systemd-run", f"--unit={self.unit}", f"--on-active={max(1, round(self.deadline_s))}s",
            "--timer-property=AccuracySec=1s", "--description=chaoskit dead-man switch",
            "/bin/sh", self.script_path,
        ]  # fmt: skip

    def disarm_argv(self) -> list[str]:
        # stopping the timer before it fired; the service may not exist yet, so failures are fine
        return [
            "sh",
            "-c",
            f"systemctl stop {self.unit}.timer {self.unit}.service 2>/dev/null; rm -f {self.script_path}; true",
        ]


def arm(nodes: NodeExec, switch: Switch) -> None:
    """Install the heal script and start its timer; the fault may only be applied after this returns."""
    nodes.run(switch.node, ["mkdir", "-p", HEAL_DIR])
    nodes.run(switch.node, ["sh", "-c", f"cat > {shlex.quote(switch.script_path)}"], input=switch.script().encode())
    nodes.run(switch.node, switch.arm_argv())


def heal(nodes: NodeExec, switch: Switch) -> None:
    """Revert now with the lines the timer would run (even if it already fired or its script is gone), then disarm.

    Raises the CommandError of the first line that failed, after trying them all and disarming.
    """
    failures = []
    for line in switch.revert:
        done = nodes.run(switch.node, ["sh", "-c", line], check=False)
        if done.returncode != 0:
            failures.append(
                CommandError(["docker", "exec", switch.node, "sh", "-c", line], done.returncode, done.output)
            )
    nodes.run(switch.node, switch.disarm_argv(), check=False)
    if failures:
        raise failures[0]


def armed(nodes: NodeExec, node: str) -> list[str]:
    """IDs of switches still armed on a node (their timers have not fired)."""
    out = nodes.run(node, ["sh", "-c", f"ls {HEAL_DIR} 2>/dev/null || true"]).stdout
    return sorted(name.removesuffix(".sh") for name in out.split() if name.endswith(".sh"))


def revert_lines(*argvs: Sequence[str]) -> tuple[str, ...]:
    """Shell lines from argv lists, quoted."""
    return tuple(shlex.join(a) for a in argvs)
