"""`chaoskit run` on the real cluster: bad input, a foreign cluster and a held lock inject nothing; --dry-run
touches nothing and plans every playbook. (Every playbook runs end to end in test_catalog.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

from chaoskit.cluster.marker import MARKER, marker_configmap
from chaoskit.safety import acquire, release
from chaoskit.seams.kube import Kube
from tests.e2e.conftest import chaoskit
from tests.e2e.radius import WATCHES_CLUSTER, touches

ALL_PLAYBOOKS = sorted(Path("playbooks").glob("*.yaml"))  # each runs end to end in test_catalog.py


def _scheduler_running(cluster: str) -> bool:
    import subprocess

    return (
        subprocess.run(
            ["docker", "exec", f"{cluster}-control-plane", "pgrep", "-x", "kube-scheduler"], capture_output=True
        ).returncode
        == 0
    )


@touches()
def test_an_invalid_playbook_exits_3_and_injects_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    text, changed = re.subn(r"duration: \d+s", "duration: soon", Path("playbooks/scheduler-down.yaml").read_text())
    assert changed == 1, "the playbook's step duration moved; update this test"
    bad.write_text(text)
    journal = tmp_path / "run.jsonl"
    done = chaoskit("run", str(bad), "--journal", str(journal))
    assert done.returncode == 3
    assert f"{bad}:" in done.stderr and "duration" in done.stderr
    assert not journal.exists()


@touches(WATCHES_CLUSTER)
def test_dry_run_shows_targets_and_reverts_and_touches_nothing(cluster: str, tmp_path: Path) -> None:
    journal = tmp_path / "run.jsonl"
    done = chaoskit("run", "playbooks/scheduler-down.yaml", "--dry-run", "-o", "json", "--journal", str(journal))
    assert done.returncode == 0, done.stderr
    (step,) = json.loads(done.stdout)["steps"]
    assert step["node"] == f"{cluster}-control-plane"
    assert any("kube-scheduler.yaml /etc/kubernetes/manifests/" in line for line in step["undo"]) and step["verify"]
    assert not journal.exists()
    assert _scheduler_running(cluster)


def test_a_cluster_chaoskit_did_not_build_is_refused(
    kube: Kube, cluster: str, tmp_path: Path, not_installed: None
) -> None:
    path = f"/api/v1/namespaces/kube-system/configmaps/{MARKER}"
    made_from = str(((kube.find(path) or {}).get("data") or {}).get("kindConfig", ""))
    kube.delete(path)
    try:
        done = chaoskit("run", "playbooks/scheduler-down.yaml", "--journal", str(tmp_path / "j.jsonl"))
    finally:
        kube.apply(marker_configmap(made_from))  # as it was: a marker without it makes `cluster up` rebuild
    assert done.returncode == 2
    assert "--allow-any-cluster" in done.stderr
    assert not (tmp_path / "j.jsonl").exists()


@touches(WATCHES_CLUSTER)
def test_a_component_locked_by_another_run_is_not_injected(kube: Kube, cluster: str, tmp_path: Path) -> None:
    """Refused at once, and by its dry run too: a dry run that exits 0 promises that the run will start."""
    lock = acquire(kube, "scheduler", "someone-else/e2e", 120)
    try:
        planned = chaoskit("run", "playbooks/scheduler-down.yaml", "--dry-run")
        done = chaoskit("run", "playbooks/scheduler-down.yaml", "--journal", str(tmp_path / "j.jsonl"))
    finally:
        release(kube, lock)
    for refused in (planned, done):
        assert refused.returncode == 4, refused.stderr
        assert "another run" in refused.stdout + refused.stderr
    assert _scheduler_running(cluster)


@touches(WATCHES_CLUSTER)
def test_every_playbook_plans_against_the_cluster_without_touching_it(cluster: str) -> None:
    done = chaoskit("run", "playbooks/", "--dry-run", "-o", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    plan = json.loads(done.stdout)
    assert sorted(p["playbook"] for p in plan["playbooks"]) == sorted(p.stem for p in ALL_PLAYBOOKS)
    for p in plan["playbooks"]:
        steps = p["steps"]
        assert steps and all(s["node"].startswith(f"{cluster}-") and s["undo"] and s["verify"] for s in steps), p[
            "playbook"
        ]
    alone = [o["runs alone"] for o in plan["order"]]
    assert alone == sorted(alone), "what runs alone comes after what may overlap"
