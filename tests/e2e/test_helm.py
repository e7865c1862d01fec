"""The Helm chart as a managed cluster would take it: `helm install --set nodes=workers` puts an agent on each of the
two workers and none on the control plane, its hook issues the agents' TLS, and the operator it installs runs the
kube-proxy-freeze playbook as a ChaosExperiment through those agents, fault injected and reverted on a worker;
the CLI through the same agents sees the control plane as out of its reach (tests/e2e/managed.py).
`helm uninstall` leaves only the CRD. One install cycle, one experiment; whatever chaoskit install stood before is
put back as it was."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

from chaoskit.cli.via_operator import experiment
from chaoskit.cluster import helm, selfimage
from chaoskit.cluster import install as ops
from chaoskit.cluster.assets import deploy_dir
from chaoskit.cluster.cache import Cache, default_root
from chaoskit.cluster.experiments import FINAL
from chaoskit.cluster.kind import Kind
from chaoskit.model.kwok import REAL_NODES_SELECTOR
from chaoskit.seams.kube import Kube
from chaoskit.seams.shell import SubprocessRunner
from chaoskit_operator.experiment import resource_path
from tests.e2e.conftest import chaoskit, process_state
from tests.e2e.managed import assert_the_managed_view
from tests.e2e.radius import INSTALL, W2, WATCHES_CLUSTER, on_node, touches

CHART = deploy_dir().parent / "helm" / "chaoskit"
PLAYBOOK = Path(__file__).parents[2] / "playbooks" / "kube-proxy-freeze.yaml"  # 10 s on a worker: the shortest
RELEASE = "chaoskit"


def _helm(cluster: str, *args: str) -> subprocess.CompletedProcess[str]:
    binary = helm.path(Cache(default_root()))
    assert binary.is_file(), f"no {binary}: `make e2e` and `make test` build it (make helm)"
    argv = [str(binary), "--kube-context", f"kind-{cluster}", "-n", ops.NAMESPACE, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)


def _workers(kube: Kube) -> list[str]:
    nodes = kube.get("/api/v1/nodes", labelSelector=REAL_NODES_SELECTOR)["items"]
    return sorted(n["metadata"]["name"] for n in nodes if ops.CONTROL_PLANE_LABEL not in n["metadata"]["labels"])


def _on_nodes(kube: Kube, app: str) -> list[str]:
    pods = kube.get(f"/api/v1/namespaces/{ops.NAMESPACE}/pods", labelSelector=f"app.kubernetes.io/name={app}")
    return sorted(p["spec"].get("nodeName", "") for p in pods["items"])


def _left(kube: Kube) -> list[str]:
    """What of the release (and its hooks) is still in the cluster."""
    paths = [
        ops.AGENT_PATH,
        f"/apis/apps/v1/namespaces/{ops.NAMESPACE}/deployments/chaoskit-operator",
        f"/api/v1/namespaces/{ops.NAMESPACE}/services/chaoskit-operator-metrics",
        f"/api/v1/namespaces/{ops.NAMESPACE}/serviceaccounts/chaoskit-operator",
        f"/api/v1/namespaces/{ops.NAMESPACE}/serviceaccounts/chaoskit-setup",
        f"/api/v1/namespaces/{ops.NAMESPACE}/secrets/{ops.AGENT_SECRET}",
        f"/api/v1/namespaces/{ops.NAMESPACE}/secrets/{ops.CLIENT_SECRET}",
        f"/apis/batch/v1/namespaces/{ops.NAMESPACE}/jobs/chaoskit-teardown",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/chaoskit-operator",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/chaoskit-operator",
        f"/apis/rbac.authorization.k8s.io/v1/clusterroles/chaoskit-setup-{ops.NAMESPACE}",
    ]
    return [p for p in paths if kube.find(p) is not None]


def _run_experiment(kube: Kube, ns: str) -> dict[str, Any]:
    exp = experiment(PLAYBOOK, ns)
    kube.create(f"/apis/chaoskit.dev/v1alpha1/namespaces/{ns}/chaosexperiments", exp)
    path = resource_path(ns, exp["metadata"]["name"])
    status: dict[str, Any] = kube.wait(
        "the experiment to finish",
        lambda: (s := (kube.find(path) or {}).get("status") or {}).get("phase") in FINAL and s,
        300,
        interval=1,
    )
    kube.delete(path)  # while the operator runs, which lets it go
    kube.wait("the experiment to be let go", lambda: kube.find(path) is None, 60)
    return status


@touches(INSTALL, on_node("kube-proxy", W2), WATCHES_CLUSTER)
def test_the_chart_installs_agents_on_the_workers_and_its_operator_runs_an_experiment(
    cluster: str, kube: Kube, ns: str
) -> None:
    installed_before = kube.find(ops.AGENT_PATH) is not None  # a `chaoskit install` of an earlier test
    if installed_before:  # same names, same host port: one or the other
        assert chaoskit("uninstall", "--cluster", cluster).returncode == 0
    local = ops.LocalInstall.for_context(f"kind-{cluster}")
    local.remove()  # the chart's hook issues a new CA: the CLI reads the clients' pair afresh
    cache, runner = Cache(default_root()), SubprocessRunner()
    Kind(runner, cache.root / "bin" / "kind").load_archive(cluster, selfimage.build(cache, runner))
    try:
        t0 = time.monotonic()
        done = _helm(cluster, "install", RELEASE, str(CHART), "--create-namespace", "--set", "nodes=workers", "--wait")
        took = time.monotonic() - t0
        assert done.returncode == 0, done.stdout + done.stderr
        print(f"\nhelm install --set nodes=workers --wait took {took:.0f}s")

        workers = _workers(kube)
        assert len(workers) == 2, workers
        assert _on_nodes(kube, "chaoskit-agent") == workers  # none on the control plane
        (operator_node,) = _on_nodes(kube, "chaoskit-operator")
        assert operator_node in workers
        assert ops.ready(kube) is None
        assert [n.name for n in ops.agent_nodes(kube)] == workers  # what the CLI and the operator dial

        assert_the_managed_view(kube, cluster)

        t0 = time.monotonic()
        status = _run_experiment(kube, ns)
        print(f"kube-proxy-freeze through the chart's operator: {status['phase']} in {time.monotonic() - t0:.0f}s")
        assert status["phase"] == "Passed", status
        (step,) = status["steps"]
        assert step["node"] in workers and step["ok"] and not step["failures"], step
        assert step["recoverySeconds"] is not None, step  # the revert's recovery check saw kube-proxy back
        assert process_state(step["node"], "kube-proxy") not in ("T", "")  # running, not stopped

        gone = _helm(cluster, "uninstall", RELEASE, "--wait")
        assert gone.returncode == 0, gone.stdout + gone.stderr
        assert _left(kube) == []
        assert kube.find("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/chaosexperiments.chaoskit.dev")
    finally:
        if _helm(cluster, "status", RELEASE).returncode == 0:  # a failure above left the release
            _helm(cluster, "uninstall", RELEASE, "--wait")
        # the namespace Helm made, and whatever a failed uninstall left: as before the test
        restored = chaoskit("uninstall", "--cluster", cluster)
        assert restored.returncode == 0, restored.stderr
        if installed_before:
            again = chaoskit("install", "--cluster", cluster)
            assert again.returncode == 0, again.stderr
