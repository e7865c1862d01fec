"""The cluster you name, and only it: a context the kubeconfig lacks, one whose API server is not the kind cluster
whose nodes chaoskit would reach, and a playbook naming a cluster its context is not are refused before anything is
read or injected (exit 2), by the real CLI against the real cluster's kubeconfig."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from chaoskit.seams.kubeconfig import read_contexts
from tests.e2e.conftest import CLUSTER, chaoskit
from tests.e2e.radius import touches

pytestmark = [pytest.mark.e2e, touches()]  # reads only
PLAYBOOK = "playbooks/scheduler-down.yaml"


def _elsewhere(tmp_path: Path) -> str:
    """The user's kubeconfig with the cluster's context pointing at another API server (a port nothing serves)."""
    path = Path(os.environ.get("KUBECONFIG") or "~/.kube/config").expanduser()
    server = read_contexts(str(path)).server(f"kind-{CLUSTER}")
    assert server, f"no context kind-{CLUSTER} in {path}"
    other = tmp_path / "kubeconfig"
    other.write_text(path.read_text().replace(server, "https://127.0.0.1:1"))
    return str(other)


def test_an_unknown_context_is_refused_by_every_command_that_reaches_the_cluster() -> None:
    for args in (("diagnose",), ("cluster", "status"), ("run", PLAYBOOK, "--dry-run")):
        done = chaoskit("--context", "no-such-context", *args, timeout=120)
        assert done.returncode == 2 and "no context 'no-such-context'" in done.stderr, (args, done.stderr)


def test_a_context_pointing_at_another_api_server_is_refused_with_both_named(tmp_path: Path) -> None:
    kubeconfig = _elsewhere(tmp_path)
    for args in (("diagnose",), ("run", PLAYBOOK, "--dry-run"), ("inject", "scheduler.down", "--duration", "1")):
        done = chaoskit("--kubeconfig", kubeconfig, *args, timeout=120)
        assert done.returncode == 2, (args, done.stdout[-800:], done.stderr[-800:])
        assert "points at https://127.0.0.1:1" in done.stderr and f"kind cluster {CLUSTER!r}" in done.stderr


def test_a_playbook_naming_a_cluster_its_context_is_not_is_refused(tmp_path: Path) -> None:
    playbook = tmp_path / "elsewhere.yaml"
    playbook.write_text(Path(PLAYBOOK).read_text().replace("spec:\n", "spec:\n  cluster: no-such-cluster\n", 1))
    done = chaoskit("--context", f"kind-{CLUSTER}", "run", str(playbook), "--dry-run", timeout=120)
    assert done.returncode == 2 and "no-such-cluster" in done.stderr, done.stderr


def test_the_current_context_is_the_cluster_acted_on_unless_one_is_named(tmp_path: Path) -> None:
    """kubectl's rule: the kubeconfig's current context when nothing names a cluster, kind-<name> when one is."""
    path = Path(os.environ.get("KUBECONFIG") or "~/.kube/config").expanduser()
    doc = YAML(typ="safe", pure=True).load(path.read_text())
    mine = next(c for c in doc["contexts"] if c["name"] == f"kind-{CLUSTER}")
    doc["clusters"].append({"name": "elsewhere", "cluster": {"server": "https://127.0.0.1:1"}})
    doc["contexts"].append({"name": "elsewhere", "context": {**mine["context"], "cluster": "elsewhere"}})
    doc["current-context"] = "elsewhere"
    kubeconfig = tmp_path / "kubeconfig"
    with kubeconfig.open("w") as out:
        YAML(typ="safe", pure=True).dump(doc, out)
    done = chaoskit("--kubeconfig", str(kubeconfig), "diagnose", timeout=120)
    assert done.returncode == 2 and "context 'elsewhere' points at https://127.0.0.1:1" in done.stderr, done.stderr
    done = chaoskit("--kubeconfig", str(kubeconfig), "diagnose", "--cluster", CLUSTER, "-o", "json", timeout=180)
    assert done.returncode in (0, 1) and '"diagnosis"' in done.stdout, done.stderr[-800:]
