"""The dead-man switch heals a real node by itself at the deadline, and a normal heal disarms it."""

from __future__ import annotations

import time
import uuid

from chaoskit.deadman import Switch, arm, armed, heal
from chaoskit.seams.nodeexec import DockerNodeExec, Node, named
from chaoskit.seams.shell import SubprocessRunner
from tests.e2e.radius import touches

pytestmark = touches()

NODE_SUFFIX = "-worker"


def _marker(nodes: DockerNodeExec, node: Node, path: str) -> bool:
    return nodes.run(node, ["test", "-e", path], check=False).returncode == 0


def test_an_armed_switch_heals_the_node_at_its_deadline_without_chaoskit(cluster: str) -> None:
    nodes, node = DockerNodeExec(SubprocessRunner()), named(f"{cluster}{NODE_SUFFIX}")
    sid = uuid.uuid4().hex[:8]
    marker = f"/var/lib/chaoskit/e2e-healed-{sid}"
    arm(nodes, Switch(sid, node, (f"touch {marker}",), deadline_s=3))
    assert sid in armed(nodes, node)
    deadline = time.monotonic() + 15
    while not _marker(nodes, node, marker) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _marker(nodes, node, marker), "the timer did not run the heal script"
    assert sid not in armed(nodes, node)
    nodes.run(node, ["rm", "-f", marker])


def test_healing_early_runs_the_revert_once_and_disarms_the_timer(cluster: str) -> None:
    nodes, node = DockerNodeExec(SubprocessRunner()), named(f"{cluster}{NODE_SUFFIX}")
    sid = uuid.uuid4().hex[:8]
    counter = f"/var/lib/chaoskit/e2e-count-{sid}"
    sw = Switch(sid, node, (f"echo x >> {counter}",), deadline_s=4)
    arm(nodes, sw)
    heal(nodes, sw)
    time.sleep(6)  # past the deadline: a timer left armed would append a second line
    assert nodes.run(node, ["cat", counter]).stdout == "x\n"
    assert nodes.run(node, ["systemctl", "is-active", f"{sw.unit}.timer"], check=False).stdout.strip() != "active"
    nodes.run(node, ["rm", "-f", counter])
