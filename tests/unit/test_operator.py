"""The operator's pure part: a ChaosExperiment's spec read as a playbook, a run record written back as status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chaoskit.cluster.experiments import FINAL
from chaoskit.engine import RevertOutcome
from chaoskit.journal import Injection
from chaoskit.model.record import CheckRecord, RunRecord, StepRecord
from chaoskit.registry import load_catalog
from chaoskit_operator.experiment import (
    Invalid,
    crd,
    final_status,
    interrupted_status,
    invalid_status,
    playbook_of,
    resource_path,
)

load_catalog()


def _resource(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "chaoskit.dev/v1alpha1",
        "kind": "ChaosExperiment",
        "metadata": {"name": "freeze", "namespace": "team-a", "uid": "0123456789"},
        "spec": spec,
    }


FREEZE = {
    "diagnose": False,
    "steadyState": [{"check": "cluster-healthy", "timeout": "60s"}],
    "steps": [{"fault": "kube-proxy.freeze", "target": {"node": "worker"}, "duration": "10s"}],
}


def test_a_valid_spec_is_the_playbook_named_after_the_resource() -> None:
    pb = playbook_of(_resource(FREEZE))
    assert not isinstance(pb, Invalid)
    assert pb.name == "freeze"
    assert pb.spec.steps[0].fault == "kube-proxy.freeze"  # type: ignore[union-attr]
    assert pb.spec.steps[0].duration == 10  # type: ignore[union-attr]


def test_every_problem_of_an_invalid_spec_is_reported_by_its_path() -> None:
    bad = {**FREEZE, "steps": [{"fault": "kube-proxy.freez", "target": {"node": "worker"}, "duration": "soon"}]}
    found = playbook_of(_resource(bad))
    assert isinstance(found, Invalid)
    assert any(p.startswith("spec.steps[0].duration:") for p in found.problems), found.problems
    assert any("kube-proxy.freeze" in p for p in found.problems), found.problems  # the close match is suggested
    status = invalid_status(found)
    assert status["phase"] == "Invalid" and status["phase"] in FINAL
    assert status["conditions"][0]["status"] == "True"


def test_a_missing_spec_is_invalid_not_a_crash() -> None:
    assert isinstance(playbook_of({"metadata": {"name": "x", "namespace": "y"}}), Invalid)


def test_final_status_carries_the_verdict_steps_and_steady_state() -> None:
    rec = RunRecord("freeze", "chaoskit", "ns", "/j.jsonl", "id", 0.0)
    rec.steps = [
        StepRecord(
            "1-kube-proxy.freeze",
            "kube-proxy.freeze",
            "chaoskit-worker",
            "freeze",
            0.21,
            10.0,
            0.4,
            fact_check={"verdict": "confirmed", "observations": []},
        )
    ]
    rec.before = [CheckRecord("cluster-healthy", True, "3 nodes Ready", 0.5)]
    status = final_status(rec, "2026-11-30T00:00:00Z")
    assert status["phase"] == "Passed" and status["exitCode"] == 0
    assert status["steps"][0] == {
        "step": "1-kube-proxy.freeze",
        "fault": "kube-proxy.freeze",
        "node": "chaoskit-worker",
        "effectSeconds": 0.21,
        "namedSeconds": None,
        "heldSeconds": 10.0,
        "recoverySeconds": 0.4,
        "ok": True,
        "factCheck": "confirmed",
        "errors": [],
        "failures": [],
    }
    assert status["steadyState"]["before"][0]["ok"] is True


def test_a_deviated_run_says_what_failed() -> None:
    rec = RunRecord("freeze", "chaoskit", "ns", "/j.jsonl", "id", 0.0)
    rec.steps = [StepRecord("s", "kube-proxy.freeze", "n", errors=["no effect within 30s"])]
    rec.verdict = "deviated"
    status = final_status(rec, "t")
    assert status["phase"] == "Deviated" and status["exitCode"] == 1
    assert "no effect within 30s" in status["message"]


def test_an_interrupted_run_reports_what_was_reverted_and_what_was_left() -> None:
    freeze = Injection("abc", "kube-proxy.freeze", "w", ("true",), 0.0)
    status = interrupted_status(RevertOutcome(reverted=[freeze]), "t")
    assert status["phase"] == "Interrupted" and "1 fault" in status["message"]
    slow = Injection("def", "kube-proxy.slow-sync", "cp", ("false",), 0.0)
    left = interrupted_status(RevertOutcome(reverted=[freeze], left=[(slow, "connection refused")]), "t")
    assert "could not revert kube-proxy.slow-sync on cp: connection refused" in left["message"]
    held = interrupted_status(RevertOutcome(held=[(freeze, "kube-proxy still stopped (T)")], unrestored=["gone"]), "t")
    assert (
        "still holding though journaled reverted: kube-proxy.freeze on w: kube-proxy still stopped" in held["message"]
    )
    assert "could not put back what the run changed: gone" in held["message"]


def test_a_run_chaoskit_could_not_do_is_an_error_not_a_deviation() -> None:
    rec = RunRecord("freeze", "chaoskit", "ns", "/j.jsonl", "id", 0.0)
    rec.steps = [StepRecord("s", "kube-proxy.freeze", "n", failures=["`pkill -STOP` failed (exit 1)"])]
    rec.verdict = "error"
    status = final_status(rec, "t")
    assert status["phase"] == "Error" and status["exitCode"] == 4
    assert "pkill -STOP" in status["message"] and status["steps"][0]["failures"]


def test_the_crd_serves_a_namespaced_chaos_experiment_with_a_status_subresource() -> None:
    definition = crd()
    assert definition["metadata"]["name"] == "chaosexperiments.chaoskit.dev"
    assert definition["spec"]["scope"] == "Namespaced"
    (version,) = definition["spec"]["versions"]
    assert version["subresources"] == {"status": {}}
    assert resource_path("a", "b") == "/apis/chaoskit.dev/v1alpha1/namespaces/a/chaosexperiments/b"


def test_operators_of_one_cluster_meet_in_kopfs_peering_and_the_installed_one_acts() -> None:
    from chaoskit.seams.kube import FakeKube
    from chaoskit_operator.__main__ import IN_CLUSTER_PRIORITY, install_crd
    from chaoskit_operator.experiment import peering

    kinds = [o["kind"] for o in peering()]
    assert kinds == ["CustomResourceDefinition", "CustomResourceDefinition", "ClusterKopfPeering"]
    (mine,) = [o for o in peering(("team-a",)) if o["kind"] == "KopfPeering"]
    assert mine["metadata"] == {
        "name": "chaoskit",
        "namespace": "team-a",
        "labels": {"app.kubernetes.io/part-of": "chaoskit"},
    }
    kube = FakeKube()
    crds = (
        "chaosexperiments.chaoskit.dev",
        "chaosschedules.chaoskit.dev",
        "clusterkopfpeerings.kopf.dev",
        "kopfpeerings.kopf.dev",
    )
    for name in crds:
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
        kube.objects[path] = {"status": {"conditions": [{"type": "Established", "status": "True"}]}}
    install_crd(kube)
    assert "/apis/kopf.dev/v1/clusterkopfpeerings/chaoskit" in kube.objects
    assert IN_CLUSTER_PRIORITY > 1  # a host-side operator draws below it: it stands by while the installed one acts


def test_an_operator_watching_some_namespaces_stands_by_while_the_installed_one_acts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """kopf's peering never meets a namespaced operator with the installed, cluster-wide one: it waits it out."""
    import asyncio
    import logging

    import kopf

    from chaoskit.cluster.install import OPERATOR_PATH
    from chaoskit.seams.kube import FakeKube
    from chaoskit.seams.shell import FakeRunner
    from chaoskit_operator import handlers

    monkeypatch.setattr(handlers, "STAND_BY_S", 0.01)
    available = {"status": {"conditions": [{"type": "Available", "status": "True"}]}}
    kube = FakeKube({OPERATOR_PATH: available})
    looks: list[int] = []

    def gone_after_three(path: str) -> Any:
        looks.append(1)
        return available if len(looks) < 3 else None

    kube.find = gone_after_three  # type: ignore[method-assign]
    said: list[str] = []

    class Said(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    logger = logging.getLogger("stand-by-test")
    logger.addHandler(Said())
    logger.setLevel(logging.INFO)
    config = handlers.Config(kube, FakeRunner(), tmp_path, namespaced=True)
    asyncio.run(handlers.stand_by(memo=kopf.Memo(config=config), logger=logger))
    assert len(looks) == 3 and said[0].startswith(handlers.STANDING_BY) and "gone" in said[-1]
    cluster_wide = handlers.Config(kube, FakeRunner(), tmp_path)  # kopf's peering decides for it
    asyncio.run(handlers.stand_by(memo=kopf.Memo(config=cluster_wide), logger=logger))
    assert len(looks) == 3
