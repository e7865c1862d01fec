"""Which node seam the CLI picks (--via): docker exec beside a kind cluster on this host, else the agents of an
install, whose clients' pair and node list are read from the API once and kept locally."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from chaoskit.cli import Globals
from chaoskit.cli.options import node_exec
from chaoskit.cli.via_operator import exit_code, experiment
from chaoskit.cluster import install as ops
from chaoskit.errors import UsageError
from chaoskit.seams.agentexec import AgentNodeExec
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import DockerNodeExec
from chaoskit.seams.pki import issue
from chaoskit.seams.shell import FakeRunner

KIND_NODE = json.dumps(
    {"Names": "c-control-plane", "Labels": "io.x-k8s.kind.role=control-plane", "Image": "i", "State": "running"}
)


def _installed() -> FakeKube:
    kube = FakeKube()
    issued = issue("t")
    kube.apply(ops.secret(ops.CLIENT_SECRET, issued.ca, issued.client))
    node = {
        "metadata": {"name": "n1", "labels": {ops.CONTROL_PLANE_LABEL: ""}},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.1.1.1"}]},
    }
    kube.objects["/api/v1/nodes"] = {"items": [node]}
    return kube


# the contexts these tests name, in a kubeconfig of their own (never the host's)
KUBECONFIG = """
contexts:
- {name: remote, context: {cluster: remote}}
- {name: elsewhere, context: {cluster: elsewhere}}
clusters:
- {name: remote, cluster: {server: "https://10.1.1.1:6443"}}
- {name: elsewhere, cluster: {server: "https://10.2.2.2:6443"}}
"""


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    return tmp_path


def test_auto_takes_docker_where_the_kind_nodes_are_on_this_host() -> None:
    runner = FakeRunner(responses={("docker", "ps"): KIND_NODE})
    seam = node_exec(Globals(None, None, None, "auto"), "c", runner, _installed())
    assert isinstance(seam, DockerNodeExec) and [n.name for n in seam.list_nodes()] == ["c-control-plane"]
    assert [c for c in runner.calls if c[:2] == ("docker", "ps")] == [runner.calls[0]]  # listed once, then kept


def test_auto_takes_the_agents_elsewhere_and_keeps_their_credentials(state: Path) -> None:
    kube = _installed()
    seam = node_exec(Globals(None, "remote", None, "auto"), "c", FakeRunner(), kube)
    assert isinstance(seam, AgentNodeExec) and seam.nodes[0].address == "10.1.1.1:10370"
    kept = state / "chaoskit" / "installs" / "remote"
    assert (kept / "tls.key").stat().st_mode & 0o777 == 0o600
    data = kube.get(f"/api/v1/namespaces/{ops.NAMESPACE}/secrets/{ops.CLIENT_SECRET}")["data"]
    assert (kept / "tls.crt").read_bytes() == base64.b64decode(data["tls.crt"])
    again = node_exec(Globals(None, "remote", None, "auto"), "c", FakeRunner(), FakeKube())  # the API is gone
    assert isinstance(again, AgentNodeExec)


def test_agent_without_an_install_is_a_usage_error_in_words() -> None:
    with pytest.raises(UsageError, match=r"not installed there \(no Secret .*`chaoskit install`") as caught:
        node_exec(Globals(None, "elsewhere", None, "agent"), "c", FakeRunner(), FakeKube())
    assert "{" not in str(caught.value)  # no raw API JSON


def test_a_playbook_becomes_an_experiment_with_its_spec_as_written(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(
        "apiVersion: chaoskit.dev/v1alpha1\nkind: Playbook\nmetadata: {name: freeze}\n"
        "spec:\n  steps: [{fault: kube-proxy.freeze, duration: 5s}]\n"
    )
    exp = experiment(f, "team-a")
    assert exp["kind"] == "ChaosExperiment" and exp["metadata"]["namespace"] == "team-a"
    assert exp["metadata"]["name"].startswith("freeze-") and exp["spec"]["steps"][0]["duration"] == "5s"
    assert [exit_code({"phase": p}) for p in ("Passed", "Deviated", "Error", "Invalid")] == [0, 1, 4, 3]
    assert exit_code({"phase": "Deviated", "exitCode": 1}) == 1
