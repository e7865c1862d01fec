"""What `chaoskit install` applies: the manifests with the chosen image, least-privilege RBAC without wildcards,
the agent on every node in the node's namespaces, one operator at a time; the Secrets issued once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from chaoskit.cluster import install as ops
from chaoskit.cluster.assets import deploy_dir
from chaoskit.seams.kube import FakeKube, KubeError


def _kinds() -> dict[str, dict]:  # type: ignore[type-arg]
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in ops.manifests("registry.example/chaoskit:1", "abc")}


def test_every_manifest_carries_the_chosen_image_and_its_id() -> None:
    objs = _kinds()
    for name in ("DaemonSet/chaoskit-agent", "Deployment/chaoskit-operator"):
        template = objs[name]["spec"]["template"]
        assert {c["image"] for c in template["spec"]["containers"]} == {"registry.example/chaoskit:1"}
        assert template["metadata"]["annotations"][ops.IMAGE_ID] == "abc"
    assert list(objs)[0] == "Namespace/chaoskit-system"


def test_the_operators_role_names_every_verb_and_resource() -> None:
    role = _kinds()["ClusterRole/chaoskit-operator"]
    for rule in role["rules"]:
        for key in ("verbs", "resources", "apiGroups", "nonResourceURLs"):
            assert "*" not in rule.get(key, []), rule
        assert not any("*" in r for r in rule.get("resources", [])), rule
    secrets = [r for r in role["rules"] if "secrets" in r.get("resources", [])]
    assert secrets == []  # the operator reads its client pair from a mounted Secret, never through the API


def test_the_agent_runs_on_every_node_in_the_nodes_namespaces_and_the_operator_alone() -> None:
    objs = _kinds()
    spec = objs["DaemonSet/chaoskit-agent"]["spec"]["template"]["spec"]
    assert spec["hostPID"] and spec["hostNetwork"] and spec["automountServiceAccountToken"] is False
    assert spec["tolerations"] == [{"operator": "Exists"}]
    (agent,) = spec["containers"]
    assert agent["securityContext"]["privileged"] and agent["ports"][0]["hostPort"] == 10370
    operator = objs["Deployment/chaoskit-operator"]["spec"]
    assert operator["replicas"] == 1 and operator["strategy"] == {"type": "Recreate"}


def test_secrets_are_issued_once_and_again_only_when_rotated() -> None:
    kube = FakeKube()
    assert ops.ensure_secrets(kube, "kind-x") is True
    first = kube.get(f"/api/v1/namespaces/{ops.NAMESPACE}/secrets/{ops.AGENT_SECRET}")["data"]["ca.crt"]
    assert ops.ensure_secrets(kube, "kind-x") is False
    assert ops.ensure_secrets(kube, "kind-x", rotate=True) is True
    assert kube.get(f"/api/v1/namespaces/{ops.NAMESPACE}/secrets/{ops.CLIENT_SECRET}")["data"]["ca.crt"] != first


def test_agent_nodes_come_from_the_api_with_roles_and_internal_addresses() -> None:
    kube = FakeKube()
    kube.objects["/api/v1/nodes"] = {
        "items": [
            {
                "metadata": {"name": "cp", "labels": {ops.CONTROL_PLANE_LABEL: ""}},
                "status": {
                    "addresses": [{"type": "Hostname", "address": "cp"}, {"type": "InternalIP", "address": "10.0.0.1"}]
                },
            },
            {"metadata": {"name": "w1"}, "status": {"addresses": [{"type": "InternalIP", "address": "fd00::2"}]}},
        ]
    }
    nodes = ops.agent_nodes(kube)
    assert [(n.name, n.role, n.address) for n in nodes] == [
        ("cp", "control-plane", "10.0.0.1:10370"),
        ("w1", "worker", "[fd00::2]:10370"),
    ]


def _experiment(name: str, phase: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "team", "finalizers": ["chaoskit.dev/revert", "theirs/keep"]},
        "status": {"phase": phase},
    }


def test_uninstall_lets_go_of_finished_experiments_and_refuses_while_one_runs() -> None:
    path = "/apis/chaoskit.dev/v1alpha1/namespaces/team/chaosexperiments"
    done, busy = _experiment("done", "Passed"), _experiment("busy", "Running")
    kube = FakeKube({f"{path}/done": done, f"{path}/busy": busy, ops.EXPERIMENTS: {"items": [done, busy]}})
    with pytest.raises(KubeError, match=r"still running: team/busy;"):
        ops.uninstall(kube)
    assert kube.objects[f"{path}/done"]["metadata"]["finalizers"] == ["chaoskit.dev/revert", "theirs/keep"]
    kube.objects[ops.EXPERIMENTS] = {"items": [done]}
    said: list[str] = []
    ops.uninstall(kube, said.append)
    assert kube.objects[f"{path}/done"]["metadata"]["finalizers"] == ["theirs/keep"]  # it stays, let go of
    assert said[0] == "released finished ChaosExperiment team/done from the operator's finalizer"


def test_uninstall_lets_go_of_the_schedules_which_stay() -> None:
    path = "/apis/chaoskit.dev/v1alpha1/namespaces/team/chaosschedules/nightly"
    nightly = {"metadata": {"name": "nightly", "namespace": "team", "finalizers": ["chaoskit.dev/revert"]}}
    kube = FakeKube({path: nightly})
    said: list[str] = []
    ops.release_experiments(kube, said.append)
    assert kube.objects[path]["metadata"]["finalizers"] == []
    assert said == ["released ChaosSchedule team/nightly from the operator's finalizer"]


def test_workers_keeps_the_agents_off_the_control_plane_and_the_operator_on_a_worker() -> None:
    objs = {f"{o['kind']}/{o['metadata']['name']}": o for o in ops.manifests(nodes="workers")}
    agent = objs["DaemonSet/chaoskit-agent"]
    assert agent["metadata"]["annotations"] == {ops.NODES_ANNOTATION: "workers"}
    required = agent["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    (term,) = required["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": "type", "operator": "NotIn", "values": ["kwok"]},
        {"key": ops.CONTROL_PLANE_LABEL, "operator": "DoesNotExist"},
    ]
    assert agent["spec"]["template"]["spec"]["tolerations"] == [{"operator": "Exists"}]  # tainted workers too
    operator = objs["Deployment/chaoskit-operator"]["spec"]["template"]["spec"]
    assert "nodeSelector" not in operator and "tolerations" not in operator
    every = {f"{o['kind']}/{o['metadata']['name']}": o for o in ops.manifests()}
    assert every.keys() == objs.keys()
    assert "annotations" not in every["DaemonSet/chaoskit-agent"]["metadata"]  # all: deploy/chaoskit as it is


def test_all_is_deploy_chaoskit_as_shipped() -> None:
    shipped = [d for n in ops.MANIFESTS for d in YAML(typ="safe").load_all((deploy_dir() / n).read_text()) if d]
    assert ops.manifests(nodes="all") == ops.manifests() == shipped


def test_dry_run_shows_the_nodes_choice() -> None:
    from click.testing import CliRunner

    from chaoskit.cli import cli

    workers = CliRunner().invoke(cli, ["install", "--dry-run", "--nodes", "workers"])
    assert workers.exit_code == 0, workers.output
    assert "chaoskit.dev/nodes: workers" in workers.output and "operator: DoesNotExist" in workers.output
    every = CliRunner().invoke(cli, ["install", "--dry-run"]).output
    assert every == ops.dump(ops.manifests()) and "chaoskit.dev/nodes" not in every
    bad = CliRunner().invoke(cli, ["install", "--dry-run", "--nodes", "masters"])
    assert bad.exit_code == 2 and "'masters' is not one of 'all', 'workers'" in bad.output


def _cluster(nodes: str | None) -> FakeKube:
    """A control-plane node and a worker, and the agents' DaemonSet saying `nodes` (None: no DaemonSet)."""
    kube = FakeKube()
    for name, labels, ip in (("cp", {ops.CONTROL_PLANE_LABEL: ""}, "10.0.0.1"), ("w1", {}, "10.0.0.2")):
        kube.objects[f"/api/v1/nodes/{name}"] = {
            "metadata": {"name": name, "labels": labels},
            "status": {"addresses": [{"type": "InternalIP", "address": ip}]},
        }
    if nodes is not None:
        meta = {"name": "chaoskit-agent", "annotations": {ops.NODES_ANNOTATION: nodes}}
        kube.objects[ops.AGENT_PATH] = {"metadata": meta}
    return kube


@pytest.mark.parametrize(("nodes", "listed"), [(None, ["cp", "w1"]), ("all", ["cp", "w1"]), ("workers", ["w1"])])
def test_agent_nodes_lists_only_nodes_that_run_an_agent(nodes: str | None, listed: list[str]) -> None:
    assert [n.name for n in ops.agent_nodes(_cluster(nodes))] == listed


def test_local_install_keeps_no_control_plane_node_when_the_agents_run_on_the_workers(tmp_path: Path) -> None:
    kube = _cluster("workers")
    ops.ensure_secrets(kube, "kind-x")
    local = ops.LocalInstall(tmp_path / "install")
    local.save(kube)
    assert [n.name for n in local.node_exec().nodes] == ["w1"]


def test_prepare_labels_the_namespace_and_issues_once_and_teardown_deletes_the_secrets() -> None:
    kube = FakeKube()
    assert ops.prepare(kube, "helm:x", "team-chaos") is True
    namespace = kube.get("/api/v1/namespaces/team-chaos")
    assert namespace["metadata"]["labels"] == ops.manifests()[0]["metadata"]["labels"]
    agent = kube.get("/api/v1/namespaces/team-chaos/secrets/chaoskit-agent-tls")
    assert agent["type"] == "kubernetes.io/tls" and set(agent["data"]) == {"ca.crt", "tls.crt", "tls.key"}
    assert ops.prepare(kube, "helm:x", "team-chaos") is False  # an upgrade's hook: the same CA
    assert kube.get("/api/v1/namespaces/team-chaos/secrets/chaoskit-agent-tls")["data"] == agent["data"]
    assert ops.remove_secrets(kube, "team-chaos") == [ops.AGENT_SECRET, ops.CLIENT_SECRET]
    assert ops.remove_secrets(kube, "team-chaos") == []
