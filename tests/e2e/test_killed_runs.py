"""Nothing is left broken when chaoskit dies: `chaoskit revert` undoes a killed run's injection at once and frees
its locks, and Ctrl-C during concurrent faults reverts both. (SIGKILL at each point of the run loop, healed by the
node at the deadline: test_revert_contract.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from chaoskit.deadman import armed
from chaoskit.journal import Journal
from chaoskit.seams.nodeexec import DockerNodeExec, named
from chaoskit.seams.shell import SubprocessRunner
from tests.e2e.conftest import chaoskit, finished, process_state
from tests.e2e.radius import W1, on_node, touches

FAULT, PROCESS = "kube-proxy.freeze", "kube-proxy"


def _state(node: str) -> str:
    return process_state(node, PROCESS)


def _wait(what: str, check, timeout: float) -> float:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < timeout, f"timed out after {timeout:.0f}s waiting for {what}"
        time.sleep(0.25)
    return time.monotonic() - start


PLAYBOOK = """\
apiVersion: chaoskit.dev/v1alpha1
kind: Playbook
metadata: {{name: killed-mid-fault}}
spec:
  cluster: {cluster}
  steps:
    - fault: kube-proxy.freeze
      target: {{node: {node}}}
      duration: {duration}s
      deadline: {deadline}s
"""


def _start_and_kill(cluster: str, tmp_path: Path, journal: Path, deadline: float) -> str:
    """`chaoskit run` a playbook holding kube-proxy frozen, and SIGKILL it as soon as the fault holds."""
    node = f"{cluster}-worker"
    playbook = tmp_path / "killed.yaml"
    # a playbook's deadline must exceed its hold; the kill comes long before either
    playbook.write_text(PLAYBOOK.format(cluster=cluster, node=node, duration=deadline - 5, deadline=deadline))
    proc = subprocess.Popen(
        [sys.executable, "-m", "chaoskit", "run", str(playbook), "--journal", str(journal)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait("the fault to hold", lambda: _state(node) == "T", 60)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert _state(node) == "T", "the fault must still hold right after the kill"
    assert [i.fault for i in Journal(journal).pending()] == [FAULT]
    return node


@touches(on_node("kube-proxy", W1))
def test_revert_undoes_a_killed_runs_injection_at_once(cluster: str, tmp_path: Path) -> None:
    journal = tmp_path / "killed.jsonl"
    node = _start_and_kill(cluster, tmp_path, journal, deadline=600)
    done = chaoskit("revert", str(journal), "--cluster", cluster)
    assert done.returncode == 0, done.stderr
    assert "reverted 1 injection" in done.stdout
    assert _state(node) not in ("T", "")
    assert Journal(journal).pending() == []
    assert armed(DockerNodeExec(SubprocessRunner()), named(node)) == []
    kubectl = ["docker", "exec", f"{cluster}-control-plane", "kubectl", "--kubeconfig=/etc/kubernetes/admin.conf"]
    lease = subprocess.run(
        [*kubectl, "-n", "kube-system", "get", "lease", "chaoskit-lock-kube-proxy"], capture_output=True
    )
    assert lease.returncode != 0, "the killed run's lock must be released by the revert"
    again = chaoskit("revert", str(journal), "--cluster", cluster)
    assert again.returncode == 0 and "nothing to revert" in again.stdout


def _sigint_default() -> None:
    """A job started in the background (as CI may run us) inherits SIGINT ignored, and Python keeps it ignored:
    give the child the default, as a foreground Ctrl-C would find it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


CONCURRENT = """\
apiVersion: chaoskit.dev/v1alpha1
kind: Playbook
metadata: {{name: interrupted-concurrent}}
spec:
  cluster: {cluster}
  steps:
    - concurrent:
        - fault: kube-proxy.freeze
          target: {{node: {cluster}-worker}}
          duration: 300s
          deadline: 400s
        - fault: scheduler.down
          duration: 300s
          deadline: 400s
"""


def test_ctrl_c_during_concurrent_faults_reverts_both_and_exits_130(cluster: str, tmp_path: Path) -> None:
    playbook, journal = tmp_path / "concurrent.yaml", tmp_path / "concurrent.jsonl"
    playbook.write_text(CONCURRENT.format(cluster=cluster))
    proc = subprocess.Popen(
        [sys.executable, "-m", "chaoskit", "run", str(playbook), "--journal", str(journal)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_sigint_default,
    )
    nodes = DockerNodeExec(SubprocessRunner())

    def scheduler_gone() -> bool:
        return (
            nodes.run(named(f"{cluster}-control-plane"), ["pgrep", "-x", "kube-scheduler"], check=False).returncode != 0
        )

    try:
        _wait("both faults to hold", lambda: _state(f"{cluster}-worker") == "T" and scheduler_gone(), 90)
        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends to the foreground process
        _, stderr = finished(proc, 180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr[-2000:]
    assert Journal(journal).pending() == [], "every injection must be reverted before exiting"
    assert _state(f"{cluster}-worker") not in ("T", "")
    _wait("the scheduler to come back", lambda: not scheduler_gone(), 120)
    assert armed(nodes, named(f"{cluster}-worker")) == [] and armed(nodes, named(f"{cluster}-control-plane")) == []
