"""The ChaosExperiment CRD's generated schema as the API server holds it: `kubectl apply --dry-run=server` refuses a
fault name the catalog lacks and an unknown field, naming the field, and takes a valid experiment; `kubectl explain`
prints the playbook's field docs. Nothing is created: every apply is a server-side dry run."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import pytest

from chaoskit.seams.kube import Kube
from chaoskit_operator.__main__ import apply_crds
from tests.e2e.radius import INSTALL, touches

pytestmark = touches(INSTALL)

NS = "default"  # a dry run needs a namespace that exists; nothing is stored in it


def kubectl(cluster: str, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--context", f"kind-{cluster}", *args], input=input, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def served(kube: Kube) -> None:
    """The CRDs as this checkout generates them, applied as the operator applies them, and established; no peering
    object, which a later `helm install` would refuse to take over."""
    apply_crds(kube)


def _experiment(name: str, step: dict[str, Any]) -> str:
    return json.dumps(
        {
            "apiVersion": "chaoskit.dev/v1alpha1",
            "kind": "ChaosExperiment",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"steadyState": [{"check": "cluster-healthy"}], "steps": [step]},
        }
    )


def _dry_run(cluster: str, body: str) -> subprocess.CompletedProcess[str]:
    return kubectl(cluster, "apply", "--dry-run=server", "-f", "-", input=body)


def test_a_fault_name_typo_is_refused_naming_the_field(served: None, cluster: str) -> None:
    done = _dry_run(cluster, _experiment("typo", {"fault": "kubelet.stpo", "duration": "10s"}))
    assert done.returncode != 0, done.stdout
    assert "spec.steps[0].fault" in done.stderr and "kubelet.stpo" in done.stderr, done.stderr
    assert "kubelet.stop" in done.stderr, done.stderr  # the supported values list the right one


def test_an_unknown_field_is_refused_naming_it(served: None, cluster: str) -> None:
    done = _dry_run(cluster, _experiment("field", {"fault": "kubelet.stop", "durration": "10s"}))
    assert done.returncode != 0, done.stdout
    assert "durration" in done.stderr, done.stderr


def test_a_valid_experiment_is_accepted(served: None, cluster: str) -> None:
    step = {"fault": "kubelet.stop", "target": {"node": "worker"}, "duration": "10s", "params": {"any": "thing"}}
    done = _dry_run(cluster, _experiment("valid", step))
    assert done.returncode == 0, done.stderr
    assert "server dry run" in done.stdout, done.stdout


def test_kubectl_explain_prints_the_playbooks_field_docs(served: None, cluster: str) -> None:
    deadline = time.monotonic() + 90  # the API server republishes its OpenAPI a few seconds after a CRD changes
    while True:
        spec = kubectl(cluster, "explain", "chx.spec")
        fault = kubectl(cluster, "explain", "chx.spec.steps.fault")
        if "A fault from the catalog" in fault.stdout or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert "A chaoskit playbook's spec" in spec.stdout, spec.stdout + spec.stderr
    assert "steadyState" in spec.stdout and "steps" in spec.stdout, spec.stdout
    assert "A fault from the catalog" in fault.stdout, fault.stdout + fault.stderr
