"""metrics-server.down's plan, the metrics pipeline's diagnosis (the API down and the HPAs it leaves blind; a blind
HPA while the API answers, only past the first scrapes of a new pod), and the HPA's own words in HPA-to-Ready."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from chaoskit.diagnosers.kit.base import ComponentReport, Finding
from chaoskit.diagnosers.kit.owning import own
from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.diagnosers.metrics_server import MetricsServerDiagnoser, MetricsServerEvidence
from chaoskit.faults.metrics_server import MetricsServerDown, MetricsServerParams
from chaoskit.measurements.hpa_tracker import HpaTracker
from chaoskit.seams.nodeexec import Node

NOW = 1_000_000.0
AT_NOW_MINUS_90 = "1970-01-12T13:45:10Z"
AT_NOW_MINUS_10 = "1970-01-12T13:46:30Z"


def hpa(reason: str = "ValidMetricFound", since: str = AT_NOW_MINUS_90) -> dict[str, Any]:
    status = "True" if reason == "ValidMetricFound" else "False"
    active = {"type": "ScalingActive", "status": status, "reason": reason, "message": "m", "lastTransitionTime": since}
    return {"metadata": {"namespace": "shop", "name": "web"}, "status": {"conditions": [active]}}


def evidence(*, available: bool = True, answers: bool = True, hpas: list[dict[str, Any]] = ()) -> MetricsServerEvidence:  # type: ignore[assignment]
    condition = {"type": "Available", "status": str(available), "reason": "Passed" if available else "MissingEndpoints"}
    sample = {"metadata": {"name": "n1"}, "timestamp": AT_NOW_MINUS_10}
    return MetricsServerEvidence(
        node="cp",
        collected_at=NOW,
        apiservice=Fetched(
            {
                "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
                "status": {"conditions": [condition]},
            }
        ),
        node_metrics=Fetched({"items": [sample]}) if answers else Fetched(error="503 ServiceUnavailable"),
        deployment=Fetched({"spec": {"replicas": 0}, "status": {}}),
        hpas=Fetched({"items": list(hpas)}),
    )


def titles(ev: MetricsServerEvidence) -> list[str]:
    return [f"{f.severity}: {f.title}" for f in MetricsServerDiagnoser().analyze(ev)]


def test_the_plan_keeps_the_replicas_for_its_revert_which_fails_while_none_are_asked_for() -> None:
    plan = MetricsServerDown().plan(Node("cp", "control-plane"), MetricsServerParams())
    assert plan.apply[-1].endswith("scale -n kube-system deployment metrics-server --replicas=0")
    assert "still asks for no replicas" in plan.revert[1] and "exit" not in " ".join(plan.revert)


def test_the_api_down_is_named_with_the_hpas_it_blinds() -> None:
    (title,) = titles(evidence(available=False, answers=False, hpas=[hpa("FailedGetResourceMetric")]))
    assert title.startswith("critical: The resource metrics API is down: APIService v1beta1.metrics.k8s.io is not")
    assert "MissingEndpoints" in title and "metrics-server 0/0 ready" in title and "1 HPA(s) blind: shop/web" in title


def test_a_healthy_pipeline_and_a_new_pods_first_scrapes_are_no_finding_a_longer_blindness_is() -> None:
    assert titles(evidence(hpas=[hpa()])) == []
    assert titles(evidence(hpas=[hpa("FailedGetResourceMetric", since=AT_NOW_MINUS_10)])) == []
    (title,) = titles(evidence(hpas=[hpa("FailedGetResourceMetric")]))
    assert title.startswith("warning: 1 HPA(s) blind for over 60s though the metrics API answers: shop/web")


def test_hpa_to_ready_keeps_what_the_hpa_said_when_it_could_not_scale() -> None:
    t = HpaTracker(0.0, lambda: 0.0)
    blind = hpa("FailedGetResourceMetric")
    blind["spec"] = {"minReplicas": 1}
    for at in (1.0, 2.0):  # said twice, kept once
        t.hpa("MODIFIED", blind, at)
    assert t.hpa_said == ["ScalingActive=False FailedGetResourceMetric: m"]


def test_metrics_server_down_under_a_lost_kubelet_is_that_kubelets_consequence() -> None:
    labels = {"k8s-app": "metrics-server"}
    pod = {"metadata": {"namespace": "kube-system", "labels": labels}, "spec": {"nodeName": "w2"}}
    other = {"metadata": {"namespace": "shop", "labels": labels}, "spec": {"nodeName": "w1"}}
    ev = replace(
        evidence(available=False, answers=False),
        deployment=Fetched({"spec": {"replicas": 1, "selector": {"matchLabels": labels}}, "status": {}}),
        pods=Fetched({"items": [pod, other]}),
    )
    (f,) = MetricsServerDiagnoser().analyze(ev)
    assert f.touches == ("node/w2",)
    kubelet = Finding("critical", "kubelet", "kubelet on w2 is down", "stopped", ())
    reports = own(
        [
            ComponentReport("kubelet", "w2", "failed", (kubelet,), ()),
            ComponentReport("metrics-server", "cp", "failed", (f,), ()),
        ]
    )
    assert reports[1].findings[0].caused_by == "kubelet/w2" and not reports[0].findings[0].caused_by
