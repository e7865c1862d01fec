"""The API server's other duties and the metrics pipeline on the real cluster: where a scale-up stopped under each
fault (from the catalog's one run), and a webhook and a binding broken out of band, by hand as a user's tool would,
named by `chaoskit diagnose` as the ones chaoskit makes are."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chaoskit.faults.apiserver.admission import WebhookParams, backend_service, webhook_configuration
from chaoskit.faults.controller_manager.permission import bootstrap_binding
from chaoskit.model.timeline import MeasurementResult, Sample
from chaoskit.playbook.loader import load_playbook
from chaoskit.registry import load_catalog
from chaoskit.seams.kube import Kube
from tests.e2e.catalog import Catalog
from tests.e2e.conftest import CLUSTER, chaoskit
from tests.e2e.radius import touches

load_catalog()
PLAYBOOKS = sorted(Path("playbooks").glob("*.yaml"))


def _scale_up(catalog: Catalog, playbook: str) -> dict[str, Any]:
    (run,) = [r for r in catalog.record["runs"] if r["playbook"] == playbook]
    (m,) = [m for m in run["measurements"] if m["type"] == "hpa_scale_up"]
    return dict(m)


@touches()
@pytest.mark.parametrize("playbook", ["apiserver-admission-webhook-failing", "controller-manager-permission-revoked"])
def test_the_scale_up_stopped_at_pod_creation(catalog: Catalog, playbook: str) -> None:
    m = _scale_up(catalog, playbook)
    stages = {k: v["max"] or 0.0 for k, v in m["summaries"].items() if k != "total"}
    assert max(stages, key=lambda k: stages[k]) == "pod_created", stages
    assert stages["pod_created"] >= 10, "the pods waited out most of the hold at pod creation"


def _batch(i: int) -> int:
    """Which slow-start batch the ReplicaSet controller creates its i-th new pod in (0-based): batches of 1, 2, 4, …,
    each started once the one before it has returned."""
    return (i + 1).bit_length()


@touches()
def test_a_slow_webhook_admits_each_batch_of_pods_a_timeout_late(catalog: Catalog) -> None:
    """Each creation waits out the webhook's timeout (the API server admits it then, failurePolicy Ignore), and the
    ReplicaSet controller sends a batch only after the one before it returned: the k-th batch's pods are created k
    timeouts after the ReplicaSet wanted them. Measured from our watch's sight of the ReplicaSet's change, which is
    late by at most the sample's precision (the watch delay the measurement measured), never early."""
    m = _scale_up(catalog, "apiserver-admission-webhook-slow")
    (playbook,) = [p for p in PLAYBOOKS if p.stem == "apiserver-admission-webhook-slow"]
    timeout = float(load_playbook(playbook).spec.fault_steps()[0].params["timeout_seconds"])
    created = sorted(
        (s for s in (MeasurementResult.from_dict(m).samples) if s.stage == "pod_created"),
        key=lambda s: (s.run, s.seconds),
    )
    assert created, m["notes"]
    by_run: dict[int, list[Sample]] = {}
    for s in created:
        by_run.setdefault(s.run, []).append(s)
    late = [
        f"{s.subject}: {s.seconds:.2f}s < {_batch(i)} x {timeout:g}s - {s.precision:.2f}s"
        for run in by_run.values()
        for i, s in enumerate(run)
        if s.seconds < _batch(i) * timeout - s.precision
    ]
    assert not late, f"a pod created sooner than its batch's timeouts allow: {late}"
    stages = {k: v["max"] or 0.0 for k, v in m["summaries"].items() if k != "total"}
    assert max(stages, key=lambda k: stages[k]) == "pod_created", stages


@touches()
def test_a_blind_hpa_never_started_and_said_why(catalog: Catalog) -> None:
    m = _scale_up(catalog, "metrics-server-down")
    said = [n for n in m["notes"] if n.startswith("the HPA said ScalingActive=False FailedGetResourceMetric")]
    assert said, m["notes"]
    assert "unable to fetch metrics from resource metrics API" in " ".join(said)


def _findings(component: str) -> list[str]:
    done = chaoskit("diagnose", component, "--cluster", CLUSTER, "-o", "json", timeout=180)
    doc = json.loads(done.stdout)["diagnosis"]
    return [f"{f['severity']}: {f['title']}" for r in doc["reports"] for f in r["findings"]]


def test_a_webhook_and_a_binding_broken_by_hand_are_named(kube: Kube, ns: str) -> None:
    p = WebhookParams(namespace=ns)
    config = webhook_configuration(p)
    config["metadata"] = {"name": "by-hand-webhook"}
    config["webhooks"][0]["name"] = "by-hand.example.com"
    kube.apply(backend_service(p))
    kube.apply(config)
    binding = "system:controller:endpointslice-controller"
    kube.delete(f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{binding}", propagation="Background")
    try:
        webhook = [f for f in _findings("apiserver") if "by-hand.example.com" in f]
        rbac = [f for f in _findings("controller-manager") if binding in f]
    finally:
        kube.delete("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/by-hand-webhook")
        kube.apply(bootstrap_binding("endpointslice"))
    assert webhook and webhook[0].startswith("critical: Admission webhook by-hand.example.com"), webhook
    assert "has no ready endpoints" in webhook[0]
    assert len(rbac) == 1 and rbac[0].startswith(
        f"critical: endpointslice-controller lost its permissions: ClusterRoleBinding {binding} is missing"
    ), rbac
