"""`chaoskit run --cluster`: the command line names the cluster over what the playbooks say, as kubectl's --context
does; without it a suite runs on the one cluster its playbooks name."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaoskit.cli.run import _suite_of
from chaoskit.errors import UsageError

REPO = Path(__file__).resolve().parents[2]
ONE = REPO / "playbooks" / "kubelet-stop.yaml"


def _elsewhere(tmp_path: Path) -> Path:
    moved = tmp_path / "elsewhere.yaml"
    text = ONE.read_text().replace("name: kubelet-stop", "name: kubelet-stop-staging", 1)
    moved.write_text(text.replace("spec:\n", "spec:\n  cluster: staging\n", 1))
    return moved


def test_the_playbooks_cluster_without_the_flag() -> None:
    _, playbooks, cluster = _suite_of((ONE,), None)
    assert cluster == playbooks[0].spec.cluster == "chaoskit"


def test_the_flag_moves_every_playbook_of_the_suite(tmp_path: Path) -> None:
    files, playbooks, cluster = _suite_of((ONE, _elsewhere(tmp_path)), None, "lab")
    assert cluster == "lab" and {pb.spec.cluster for pb in playbooks} == {"lab"} and len(files) == 2


def test_without_the_flag_two_clusters_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="a suite runs on one cluster; these playbooks name chaoskit, staging"):
        _suite_of((ONE, _elsewhere(tmp_path)), None)
