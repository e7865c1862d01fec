"""Every symptom owned: the cluster's symptoms read from its objects, given to the findings that explain them, and
the rest reported, so a diagnosis is ok only when no symptom stands."""

from __future__ import annotations

from typing import Any

from chaoskit.components.workloads import (
    deployment_symptoms,
    hpa_symptoms,
    node_symptoms,
    owner_of,
    pod_symptoms,
    service_symptoms,
)
from chaoskit.diagnosers.kit.base import UNCOLLECTED, ComponentReport, Diagnosis, Evidence, Finding, Symptom, status_of
from chaoskit.diagnosers.kit.owning import UNEXPLAINED, own
from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.diagnosers.run import collection_failed
from chaoskit.diagnosers.workloads import WorkloadsDiagnoser, WorkloadsEvidence

NOW = 1_800_000_000.0
CP, W = "chaoskit-control-plane", "chaoskit-worker"


def stamp(ago: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(NOW - ago, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    name: str,
    ns: str = "shop",
    *,
    node: str = W,
    phase: str = "Running",
    ready: bool = True,
    age: float = 600,
    labels: dict[str, str] | None = None,
    waiting: str = "",
    rs: str = "web-5d8f7c9b6",
    **extra: Any,
) -> dict[str, Any]:
    statuses = [
        {
            "name": "app",
            "state": {"waiting": {"reason": waiting, "message": "back-off"}} if waiting else {"running": {}},
            "restartCount": 4 if waiting else 0,
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}} if waiting else {},
        }
    ]
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "creationTimestamp": stamp(age),
            "labels": {"app": "web", "pod-template-hash": "5d8f7c9b6", **(labels or {})},
            "ownerReferences": [{"kind": "ReplicaSet", "name": rs}],
        },
        "spec": {"nodeName": node} if node else {},
        "status": {
            "phase": phase,
            "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": stamp(age)},
                {
                    "type": "PodScheduled",
                    "status": "True" if node else "False",
                    "message": "0/3 nodes are available: 1 node(s) were unschedulable.",
                },
            ],
            "containerStatuses": statuses,
            **extra,
        },
    }


def symptoms_of(*pods: dict[str, Any], words: dict[str, str] | None = None) -> list[Any]:
    return pod_symptoms(pods, NOW, pending_after=30, ready_after=60, last_words=words or {})


# reading symptoms


def test_a_healthy_pod_shows_nothing_and_a_young_pending_one_neither() -> None:
    assert symptoms_of(pod("web-1"), pod("web-2", node="", phase="Pending", age=5)) == []


def test_pods_pending_unscheduled_are_one_symptom_per_workload_standing_on_the_scheduler() -> None:
    (s,) = symptoms_of(pod("web-1", node="", phase="Pending"), pod("web-2", node="", phase="Pending"))
    assert (s.kind, s.entity) == ("pending", "deployment/shop/web")
    assert "unschedulable" in s.text and "+1 more pod(s)" in s.text
    assert "component/scheduler" in s.touches and s.cause == ""


def test_a_crash_loop_says_its_containers_last_words_and_names_its_workload() -> None:
    (s,) = symptoms_of(pod("web-1", waiting="CrashLoopBackOff"), words={"pod/shop/web-1": "bad config: port"})
    assert s.entity == "deployment/shop/web"
    assert "exit 1 Error" in s.cause and s.cause.endswith("bad config: port")


def test_a_pod_not_ready_long_stands_on_its_node() -> None:
    (s,) = symptoms_of(pod("web-1", ready=False))
    assert s.kind == "not-ready" and f"node/{W}" in s.touches


def test_a_replica_set_pod_belongs_to_its_deployment_a_static_pod_to_itself() -> None:
    assert owner_of(pod("web-1")) == "deployment/shop/web"
    static = {"metadata": {"name": "etcd-cp", "namespace": "kube-system", "ownerReferences": [{"kind": "Node"}]}}
    assert owner_of(static) == "pod/kube-system/etcd-cp"


def test_a_kube_proxy_pod_stands_on_the_kube_proxy_component() -> None:
    (s,) = symptoms_of(pod("kube-proxy-x", "kube-system", waiting="CrashLoopBackOff", labels={"k8s-app": "kube-proxy"}))
    assert "component/kube-proxy" in s.touches


def test_a_service_whose_selector_matches_no_pod_says_so_and_one_with_unready_pods_stands_on_them() -> None:
    svc = {
        "metadata": {"name": "web", "namespace": "shop", "creationTimestamp": stamp(600)},
        "spec": {"selector": {"app": "web"}},
    }
    (none,) = service_symptoms([svc], [], [], NOW, endpoints_after=30)
    assert none.entity == "service/shop/web" and "matches no pod" in none.cause
    (unready,) = service_symptoms([svc], [], [pod("web-1", ready=False)], NOW, endpoints_after=30)
    assert "deployment/shop/web" in unready.touches and unready.cause == ""
    ready = {
        "metadata": {"namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
        "endpoints": [{"conditions": {"ready": True}}],
    }
    assert service_symptoms([svc], [ready], [pod("web-1")], NOW, endpoints_after=30) == []


def test_an_hpa_without_a_cpu_request_blames_its_target_not_metrics_server() -> None:
    hpa = {
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}},
        "status": {
            "conditions": [
                {
                    "type": "ScalingActive",
                    "status": "False",
                    "reason": "FailedGetResourceMetric",
                    "message": "failed to get cpu utilization: missing request for cpu in container app",
                    "lastTransitionTime": stamp(300),
                }
            ]
        },
    }
    (s,) = hpa_symptoms([hpa], NOW, blind_after=60)
    assert s.entity == "deployment/shop/web" and "no resource request" in s.cause
    assert "component/metrics-server" not in s.touches


def test_a_deployment_refused_its_pods_stands_on_the_controller_manager() -> None:
    d = {
        "metadata": {"name": "web", "namespace": "shop"},
        "status": {
            "conditions": [
                {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "exceeded quota"}
            ]
        },
    }
    (s,) = deployment_symptoms([d], NOW, unavailable_after=60)
    assert "exceeded quota" in s.text and "component/controller-manager" in s.touches


def test_node_conditions() -> None:
    node = {
        "metadata": {"name": W},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"},
                {"type": "DiskPressure", "status": "True", "message": "disk"},
            ]
        },
    }
    assert [s.text.split(" ")[1] for s in node_symptoms([node])] == ["is", "has"]


# owning them


def symptom(entity: str, *touches: str, cause: str = "") -> Symptom:
    return Symptom("pending", entity, f"{entity} waits", touches, Evidence("pods", "GET /api/v1/pods"), cause)


def finding(component: str, severity: str = "critical", **kw: Any) -> Finding:
    return Finding(severity, component, f"{component} is broken", "because", **kw)  # type: ignore[arg-type]


def report(component: str, node: str, *found: Finding, symptoms: tuple[Symptom, ...] = ()) -> ComponentReport:
    return ComponentReport(component, node, status_of(found), found, (), symptoms)


def test_a_symptom_nobody_explains_is_reported_and_the_look_is_not_ok() -> None:
    reports = own([report("kubelet", W), report("workloads", CP, symptoms=(symptom("deployment/shop/web", "node/x"),))])
    look = Diagnosis("chaoskit", reports, NOW, 1.0)
    (f,) = reports[1].findings
    assert f.title.startswith(UNEXPLAINED) and f.entity == "deployment/shop/web"
    assert reports[1].status == "degraded" and not look.ok and look.breached


def test_a_kubelet_down_explains_the_pods_on_its_node_only() -> None:
    on_w = symptom("deployment/shop/web", f"node/{W}")
    elsewhere = symptom("deployment/shop/api", "node/chaoskit-worker2")
    kubelet, workloads = own(
        [report("kubelet", W, finding("kubelet")), report("workloads", CP, symptoms=(on_w, elsewhere))]
    )
    assert kubelet.findings[0].explains == (on_w.text,)
    assert [f.entity for f in workloads.findings] == ["deployment/shop/api"]


def test_an_api_server_down_explains_everything_and_a_warning_of_it_does_not() -> None:
    s = symptom("deployment/shop/web", "node/x")
    (_, workloads) = own([report("apiserver", CP, finding("apiserver")), report("workloads", CP, symptoms=(s,))])
    assert workloads.status == "ok"
    (_, workloads) = own(
        [report("apiserver", CP, finding("apiserver", "warning")), report("workloads", CP, symptoms=(s,))]
    )
    assert workloads.status == "degraded"


def test_a_symptom_that_says_why_is_a_finding_of_its_entity_not_a_mystery() -> None:
    s = symptom("deployment/shop/web", cause="container app exits: bad flag")
    (workloads,) = own([report("workloads", CP, symptoms=(s,))])
    (f,) = workloads.findings
    assert f.entity == "deployment/shop/web" and f.probable_cause == s.cause and not f.title.startswith(UNEXPLAINED)


def test_a_finding_that_stands_on_a_broken_node_is_its_consequence() -> None:
    kubelet = finding("kubelet")
    metrics = finding("metrics-server", touches=(f"node/{W}",))
    reports = own([report("kubelet", W, kubelet), report("metrics-server", CP, metrics)])
    look = Diagnosis("chaoskit", reports, NOW, 1.0)
    assert reports[1].findings[0].caused_by == f"kubelet/{W}"
    assert [f.component for f in look.root_causes()] == ["kubelet"]
    assert look.summary().startswith("Root cause: kubelet: kubelet is broken")


def test_etcd_and_the_api_server_down_together_the_store_is_the_root() -> None:
    reports = own([report("apiserver", CP, finding("apiserver")), report("etcd", CP, finding("etcd"))])
    assert reports[0].findings[0].caused_by == f"etcd/{CP}" and reports[1].findings[0].caused_by == ""


def test_a_look_that_could_not_be_made_is_unknown_and_fails_no_gate() -> None:
    failed = collection_failed("kubelet", W, TimeoutError("budget"))
    look = Diagnosis("chaoskit", own([report("etcd", CP), failed]), NOW, 1.0)
    assert failed.status == "unknown" and failed.findings[0].title == UNCOLLECTED
    assert look.status == "unknown" and not look.breached and not look.judged_nothing
    assert "Not judged: kubelet@chaoskit-worker" in look.summary()
    assert Diagnosis("chaoskit", (failed,), NOW, 1.0).judged_nothing


def test_a_healthy_look_says_ok_in_one_sentence() -> None:
    look = Diagnosis("chaoskit", own([report("etcd", CP), report("workloads", CP)]), NOW, 1.0)
    assert look.ok and look.summary().startswith("ok")


def test_the_workloads_diagnoser_hands_over_symptoms_and_draws_no_verdict_of_a_component() -> None:
    items = lambda *objs: Fetched({"items": list(objs)})  # noqa: E731
    ev = WorkloadsEvidence(
        NOW,
        items(pod("web-1", node="", phase="Pending")),
        items(),
        items(),
        items(),
        items(),
        Fetched(error="GET /api/v1/nodes: timed out"),
        {},
    )
    r = WorkloadsDiagnoser().report(ev, CP)
    assert r.findings == () and [s.kind for s in r.symptoms] == ["pending"]
    assert [e.available for e in r.checks] == [True, True, True, True, False, True]


def test_symptoms_and_causes_survive_the_json_record() -> None:
    s = symptom("deployment/shop/web", f"node/{W}")
    reports = own(
        [report("kubelet", W, finding("kubelet", entity=f"node/{W}")), report("workloads", CP, symptoms=(s,))]
    )
    look = Diagnosis("chaoskit", reports, NOW, 1.0)
    back = Diagnosis.from_dict(look.to_dict())
    assert back.reports == look.reports and look.to_dict()["summary"] == look.summary()


def test_a_service_of_a_deployment_scaled_to_zero_names_the_deployment() -> None:
    svc = {
        "metadata": {"name": "web", "namespace": "shop", "creationTimestamp": stamp(600)},
        "spec": {"selector": {"app": "web"}},
    }
    zero = {
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"replicas": 0, "template": {"metadata": {"labels": {"app": "web", "tier": "front"}}}},
    }
    (s,) = service_symptoms([svc], [], [], NOW, endpoints_after=30, deployments=[zero])
    assert s.entity == "deployment/shop/web" and "scaled to zero" in s.cause


def test_a_target_port_no_pod_declares_is_the_services_own_cause() -> None:
    svc = {
        "metadata": {"name": "web", "namespace": "shop", "creationTimestamp": stamp(600)},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 9999}]},
    }
    ready = {
        "metadata": {"namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
        "endpoints": [{"conditions": {"ready": True}}],
    }
    serving = pod("web-1")
    serving["spec"]["containers"] = [{"name": "app", "ports": [{"containerPort": 8080}]}]
    (s,) = service_symptoms([svc], [ready], [serving], NOW, endpoints_after=30)
    assert s.kind == "wrong-port" and s.entity == "service/shop/web" and "targets 9999" in s.cause
    svc["spec"]["ports"][0]["targetPort"] = 8080
    assert service_symptoms([svc], [ready], [serving], NOW, endpoints_after=30) == []


def test_an_hpa_whose_target_is_not_there_is_its_own_cause() -> None:
    hpa = {
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web-typo"}},
        "status": {
            "conditions": [
                {
                    "type": "AbleToScale",
                    "status": "False",
                    "reason": "FailedGetScale",
                    "message": 'deployments/scale.apps "web-typo" not found',
                    "lastTransitionTime": stamp(300),
                }
            ]
        },
    }
    (s,) = hpa_symptoms([hpa], NOW, blind_after=60)
    assert s.entity == "horizontalpodautoscaler/shop/web" and "web-typo" in s.cause


def test_the_nodes_that_keep_pods_out_are_named_beside_their_workload() -> None:
    pinned = pod("web-1", node="", phase="Pending", age=60)
    pinned["spec"]["nodeSelector"] = {"kubernetes.io/hostname": W}
    cordoned = {"metadata": {"name": W, "labels": {"kubernetes.io/hostname": W}}, "spec": {"unschedulable": True}}
    said = {
        "shop/web-1": "0/3 nodes are available: 1 node(s) were unschedulable, "
        "2 node(s) didn't match Pod's node affinity/selector."
    }
    events = [
        {"involvedObject": {"kind": "Pod", "namespace": "shop", "name": "web-1"}, "message": m} for m in said.values()
    ]
    items = lambda *objs: Fetched({"items": list(objs)})  # noqa: E731
    ev = WorkloadsEvidence(NOW, items(pinned), items(), items(), items(), items(), items(cordoned), {}, items(*events))
    (workloads,) = own([WorkloadsDiagnoser().report(ev, CP)])
    (f,) = workloads.findings
    assert f.entities == ("deployment/shop/web", f"node/{W}") and "cordoned" in f.title
    assert f.remediation[0].startswith("kubectl uncordon")


def test_a_symptom_that_says_why_explains_what_stands_on_its_entity() -> None:
    crash = symptom("deployment/shop/web", cause="container app exits: bad flag")
    service = symptom("service/shop/web", "deployment/shop/web", f"node/{W}")
    (workloads,) = own([report("workloads", CP, symptoms=(service, crash))])
    (f,) = workloads.findings
    assert f.entity == "deployment/shop/web" and f.explains == (crash.text, service.text)


def test_pods_refused_by_pod_security_name_the_namespace() -> None:
    d = {
        "metadata": {"name": "web", "namespace": "shop"},
        "status": {
            "conditions": [
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "reason": "FailedCreate",
                    "message": 'pods "web-x" is forbidden: violates PodSecurity "restricted:latest"',
                }
            ]
        },
    }
    (s,) = deployment_symptoms([d], NOW, unavailable_after=60)
    assert s.entity == "namespace/shop" and "Pod Security" in s.cause


def test_junit_skips_a_look_that_could_not_be_made_and_fails_a_verdict_with_its_entity() -> None:
    from junitparser import Failure, JUnitXml, Skipped

    from chaoskit.reports import render

    verdict = finding("kubelet", entity=f"node/{W}", evidence=(Evidence("service", "systemctl is-active kubelet"),))
    look = Diagnosis(
        "chaoskit", own([report("kubelet", W, verdict), collection_failed("etcd", CP, TimeoutError("x"))]), NOW, 1.0
    )
    xml = JUnitXml.fromstring(render(look, "junit", None))
    results = {s.name: [r for c in s for r in c.result] for s in xml}
    assert [type(r) for r in results["etcd"]] == [Skipped]
    (failed,) = results["kubelet"]
    assert isinstance(failed, Failure) and f"entity: node/{W}" in (failed.text or "")


def test_metrics_server_scaled_to_zero_owns_its_services_missing_endpoint() -> None:
    down = finding(
        "metrics-server",
        entity="deployment/kube-system/metrics-server",
        affects=("component/metrics-server", "service/kube-system/metrics-server"),
    )
    empty = symptom(
        "deployment/kube-system/metrics-server", "service/kube-system/metrics-server", cause="scaled to zero"
    )
    reports = own([report("metrics-server", CP, down), report("workloads", CP, symptoms=(empty,))])
    assert reports[1].status == "ok" and reports[0].findings[0].explains == (empty.text,)
