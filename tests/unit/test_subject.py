"""chaoskit.subject: the user's own objects found, and the one change chaoskit makes to them put back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaoskit import subject as subjects
from chaoskit.errors import UsageError
from chaoskit.journal import Journal
from chaoskit.model.playbook import Subject, SubjectLoad
from chaoskit.seams.kube import FakeKube

NS = "shop"
HPA = f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers/prices-hpa"


def _shop() -> FakeKube:
    deploy: dict[str, Any] = {
        "metadata": {"name": "prices", "namespace": NS},
        "spec": {"selector": {"matchLabels": {"app": "prices"}}},
    }
    hpa = {
        "metadata": {"name": "prices-hpa"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "prices"}, "minReplicas": 2, "maxReplicas": 6},
    }
    other_svc = {
        "metadata": {"name": "storefront"},
        "spec": {"selector": {"app": "storefront"}, "ports": [{"port": 80}]},
    }
    svc = {"metadata": {"name": "prices"}, "spec": {"selector": {"app": "prices"}, "ports": [{"port": 8080}]}}
    return FakeKube(
        {
            f"/apis/apps/v1/namespaces/{NS}/deployments/prices": deploy,
            HPA: hpa,
            f"/api/v1/namespaces/{NS}/services/storefront": other_svc,
            f"/api/v1/namespaces/{NS}/services/prices": svc,
        }
    )


def test_a_deployment_by_name_brings_its_hpa_and_service_found_by_reference_and_selector() -> None:
    found = subjects.resolve(_shop(), Subject(namespace=NS, deployment="prices"))
    assert (found.kind, found.name, found.hpa, found.service, found.ours) == (
        "Deployment",
        "prices",
        "prices-hpa",
        "prices",
        False,
    )
    assert found.words() == "Deployment shop/prices, HPA prices-hpa, Service prices"


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        (Subject(namespace=NS, deployment="nope"), "no Deployment shop/nope"),
        (Subject(namespace=NS, deployment="prices", hpa="nope"), "no HorizontalPodAutoscaler shop/nope"),
        (Subject(namespace=NS, deployment="prices", service="nope"), "no Service shop/nope"),
        (
            Subject(namespace="elsewhere", selector={"app": "x"}),
            "must match one Deployment in elsewhere, it matches none",
        ),
    ],
)
def test_what_is_not_there_is_named_before_anything_runs(spec: Subject, error: str) -> None:
    with pytest.raises(UsageError, match=error):
        subjects.resolve(_shop(), spec)


def test_a_raised_min_replicas_is_journaled_first_and_put_back_once(tmp_path: Path) -> None:
    kube, journal = _shop(), Journal(tmp_path / "run.jsonl")
    found = subjects.resolve(kube, Subject(namespace=NS, deployment="prices"))
    subjects.raise_min_replicas(kube, found, 4, journal)
    assert kube.objects[HPA]["spec"] == {
        "scaleTargetRef": {"kind": "Deployment", "name": "prices"},
        "minReplicas": 4,
        "maxReplicas": 6,
    }
    assert [c["what"] for c in journal.pending_changes()] == ["HPA shop/prices-hpa minReplicas back to 2 (raised to 4)"]
    subjects.raise_min_replicas(kube, found, 5, journal)
    assert subjects.put_back(kube, journal) == [
        "HPA shop/prices-hpa minReplicas back to 4 (raised to 5)",
        "HPA shop/prices-hpa minReplicas back to 2 (raised to 4)",
    ]
    assert kube.objects[HPA]["spec"]["minReplicas"] == 2 and journal.pending_changes() == []
    assert subjects.put_back(kube, journal) == []


def test_chaoskits_own_workload_changes_nothing_to_put_back(tmp_path: Path) -> None:
    kube, journal = FakeKube(), Journal(tmp_path / "run.jsonl")
    kube.objects["/apis/autoscaling/v2/namespaces/ck/horizontalpodautoscalers/web"] = {"spec": {"minReplicas": 1}}
    subjects.raise_min_replicas(kube, subjects.chaoskits("ck"), 3, journal)
    assert journal.pending_changes() == []


def test_the_load_goes_to_the_services_dns_name_and_first_port() -> None:
    url = subjects.service_url(_shop(), NS, SubjectLoad(service="storefront", path="/?item=tea"))
    assert url == "http://storefront.shop.svc.cluster.local:80/?item=tea"


def test_chaoskit_revert_puts_back_what_a_dead_run_changed(tmp_path: Path) -> None:
    from chaoskit.engine import revert_journal
    from chaoskit.env import Env
    from chaoskit.seams.nodeexec import FakeNodeExec

    kube, journal = _shop(), Journal(tmp_path / "dead.jsonl")
    subjects.raise_min_replicas(kube, subjects.resolve(kube, Subject(namespace=NS, deployment="prices")), 5, journal)
    outcome = revert_journal(Env(kube, FakeNodeExec(), "chaoskit"), journal)
    assert outcome.restored == ["HPA shop/prices-hpa minReplicas back to 2 (raised to 5)"] and not outcome.unrestored
    assert kube.objects[HPA]["spec"]["minReplicas"] == 2
