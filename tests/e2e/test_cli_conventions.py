"""The CLI behaves like kubectl's against the real cluster: `validate` catches a node the cluster does not have at
file:line:col, `--node` completes the cluster's node names, and kubectl runs chaoskit as its plugin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from chaoskit.cluster.cache import default_root
from tests.e2e.conftest import chaoskit
from tests.e2e.radius import touches

pytestmark = [pytest.mark.e2e, touches()]  # reads only
REPO = Path(__file__).resolve().parents[2]


def test_validate_catches_a_node_the_cluster_lacks_at_its_line_and_column(tmp_path: Path, cluster: str) -> None:
    typo = tmp_path / "typo.yaml"
    typo.write_text(
        (REPO / "playbooks" / "kubelet-stop.yaml").read_text().replace(f"{cluster}-worker2", f"{cluster}-wroker2")
    )
    line = next(i for i, text in enumerate(typo.read_text().splitlines(), 1) if f"{cluster}-wroker2" in text)
    refused = chaoskit("validate", str(typo))
    assert refused.returncode == 3, (refused.stdout, refused.stderr)
    assert f"{typo}:{line}:" in refused.stderr and f"did you mean '{cluster}-worker2'" in refused.stderr
    offline = chaoskit("validate", "--offline", str(typo))
    assert offline.returncode == 0 and "nodes not checked (--offline)" in offline.stderr, offline.stderr
    assert chaoskit("validate", str(REPO / "playbooks" / "kubelet-stop.yaml")).returncode == 0


def test_node_names_complete_from_the_cluster(cluster: str) -> None:
    # as the sourced script asks: the `chaoskit` entry point, with what is typed so far in the environment
    env = {
        **os.environ,
        "_CHAOSKIT_COMPLETE": "bash_complete",
        "COMP_WORDS": f"chaoskit inject kubelet.stop --node {cluster}-w",
    }
    done = subprocess.run(
        [str(Path(sys.executable).parent / "chaoskit")],
        env={**env, "COMP_CWORD": "4"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.split() == [f"plain,{cluster}-worker", f"plain,{cluster}-worker2"], done


def test_kubectl_runs_chaoskit_as_its_plugin(cluster: str) -> None:
    plugin_dir = str(Path(sys.executable).parent)  # where the package installs kubectl-chaoskit beside chaoskit
    kubectl = str(default_root() / "bin" / "kubectl")
    env = {**os.environ, "PATH": f"{plugin_dir}:{os.environ['PATH']}"}
    listed = subprocess.run([kubectl, "plugin", "list"], env=env, capture_output=True, text=True, timeout=60)
    assert f"{plugin_dir}/kubectl-chaoskit" in listed.stdout, (listed.stdout, listed.stderr)
    names = subprocess.run(
        [kubectl, "chaoskit", "faults", "list", "--cluster", cluster, "-o", "name"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert names.returncode == 0 and "fault/kubelet.stop" in names.stdout.split(), (names.stdout, names.stderr)
