"""A control plane chaoskit cannot reach: its API server's own endpoints are read through the API, everything
node-local comes back not run with the reason, and that reason is a note, not a warning."""

from __future__ import annotations

from diagnose_evidence import lease_time, obj

from chaoskit.components import apiserver
from chaoskit.diagnosers.kit.base import UNCOLLECTED, ComponentReport, Evidence, Finding
from chaoskit.diagnosers.kit.common import HttpAnswer, http_command, uncollected, unread
from chaoskit.diagnosers.kit.managed import MANAGED, OUT_OF_REACH, control_plane_of, out_of_reach_noted, through_api
from chaoskit.diagnosers.kit.sources import ApiAccess, Sources, window_wait
from chaoskit.diagnosers.kit.staticpod import process_commands
from chaoskit.diagnosers.kubelet import KubeletDiagnoser
from chaoskit.env import Env
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.seams.scrape import Metrics, scrape_command

METRICS = '# TYPE apiserver_request_total counter\napiserver_request_total{code="200"} 5\nother_metric 1\n'


def test_the_api_servers_own_endpoints_are_read_through_the_api_and_the_rest_is_out_of_reach() -> None:
    kube = FakeKube(raw_paths={"/readyz?verbose": "[+]ping ok\nreadyz check passed", "/metrics": METRICS})
    scrape = scrape_command(f"{apiserver.URL}/metrics", ("apiserver_request_total",), client_cert=True)
    s = through_api(
        kube,
        {
            "readyz": http_command(f"{apiserver.URL}/readyz?verbose"),
            "before": scrape,
            "wait": window_wait(1),
            "after": scrape,
            **process_commands(apiserver.PROCESS),
        },
        [("before", "wait", "after")],
    )
    assert HttpAnswer.of(s["readyz"]).code == 200 and "readyz check passed" in s["readyz"].output
    after = Metrics.parse(s["after"].output)
    assert after.total("apiserver_request_total") == 5 and not after.select("other_metric")  # only what was asked
    assert s["process"].rc is None and unread(s["process"]) == OUT_OF_REACH


def test_an_endpoint_that_does_not_answer_is_said_as_curl_says_it() -> None:
    s = through_api(FakeKube(), {"livez": http_command(f"{apiserver.URL}/livez?verbose")}, [])
    assert not HttpAnswer.of(s["livez"]).answered or HttpAnswer.of(s["livez"]).code != 200


def test_out_of_reach_evidence_is_a_note_and_the_component_stays_judged_by_the_rest() -> None:
    ev = Evidence("process", "pgrep", {})
    noted = uncollected("apiserver", "cp", "kube-apiserver", OUT_OF_REACH, ev)
    real = Finding("critical", "apiserver", "/readyz: [-]etcd failed", "etcd", (ev,))
    report = ComponentReport("apiserver", "cp", "degraded", (noted,), (ev,))
    assert out_of_reach_noted(report).status == "ok"
    assert out_of_reach_noted(report).findings[0].severity == "info"
    both = ComponentReport("apiserver", "cp", "failed", (real, noted), (ev,))
    assert out_of_reach_noted(both).status == "failed"  # what the API shows still judges
    other = uncollected("apiserver", "cp", "kube-apiserver", "cut off after 3s", ev)
    assert (
        out_of_reach_noted(ComponentReport("apiserver", "cp", "degraded", (other,), (ev,))).findings[0].title
        == UNCOLLECTED
    )


def test_the_control_plane_is_the_reached_one_else_the_apis_and_out_of_reach() -> None:
    cp = {"metadata": {"name": "cp", "labels": {"node-role.kubernetes.io/control-plane": ""}}}
    worker = {"metadata": {"name": "w1", "labels": {}}}
    kube = FakeKube({"/api/v1/nodes/cp": cp, "/api/v1/nodes/w1": worker})
    assert control_plane_of(kube, [Node("cp", "control-plane"), Node("w1", "worker")]) == ("cp", frozenset())
    assert control_plane_of(kube, [Node("w1", "worker")]) == ("cp", frozenset({"cp"}))
    managed = FakeKube({"/api/v1/nodes/w1": worker})  # a managed control plane is no node
    assert control_plane_of(managed, [Node("w1", "worker")]) == (MANAGED, frozenset({MANAGED}))


def test_a_helpers_line_keeps_what_it_asks_through_the_node_batch_and_a_composed_one_does_not() -> None:
    kube = FakeKube(raw_paths={"/livez?verbose": "[+]ping ok\nlivez check passed"})
    src = Sources.of(Env(kube, FakeNodeExec(), "chaoskit"), "cp", ("w",)).batched()
    src.out_of_reach, src.elsewhere = frozenset({"cp"}), through_api
    livez = http_command(f"{apiserver.URL}/livez?verbose")
    s = src.sections("cp", {"livez": livez, "composed": livez + " || true"})
    assert HttpAnswer.of(s["livez"]).code == 200 and "livez check passed" in s["livez"].output
    assert unread(s["composed"]) == OUT_OF_REACH  # a plain str again: what it asks is no longer known


def test_a_control_plane_nodes_kubelet_out_of_reach_is_judged_from_what_the_api_shows_of_it() -> None:
    """No agent on the control-plane node (`install --nodes workers`): its kubelet is judged by the node's Ready
    condition, its lease and its pods; its node-local evidence is a note."""
    worker = obj("kubelet/node.json")["metadata"]["name"]
    kube = FakeKube(
        {
            f"/api/v1/nodes/{worker}": obj("kubelet/node.json"),
            f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{worker}": obj("kubelet/lease.json"),
            "/api/v1/namespaces/kube-system/pods/x": {"metadata": {"name": "x"}, "spec": {"nodeName": worker}},
        }
    )
    at = lease_time("kubelet/lease.json") + 2
    src = Sources(Env(kube, FakeNodeExec(), "chaoskit"), worker, (), ApiAccess(kube), clock=lambda: at).batched()
    src.out_of_reach, src.elsewhere = frozenset({worker}), through_api
    diagnoser = KubeletDiagnoser()
    report = out_of_reach_noted(diagnoser.report(diagnoser.collect(src, worker), worker))
    assert report.status == "ok", [(f.severity, f.title) for f in report.findings]
    assert {f.severity for f in report.findings} == {"info"}
    available = {c.check: c.available for c in report.checks}
    assert [f.title for f in report.findings] == ["Node-local evidence out of reach (managed control plane)"]
    assert available["node-ready"] and available["heartbeat"], available


def test_a_control_plane_nodes_kubelet_out_of_reach_that_stopped_heartbeating_fails_on_the_apis_word() -> None:
    worker = obj("kubelet/node.json")["metadata"]["name"]
    node = obj("kubelet/node.json")
    for c in node["status"]["conditions"]:
        if c["type"] == "Ready":
            c["status"], c["reason"], c["message"] = (
                "Unknown",
                "NodeStatusUnknown",
                "Kubelet stopped posting node status.",
            )
    kube = FakeKube(
        {
            f"/api/v1/nodes/{worker}": node,
            f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{worker}": obj("kubelet/lease.json"),
        }
    )
    at = lease_time("kubelet/lease.json") + 120  # the lease two minutes old
    src = Sources(Env(kube, FakeNodeExec(), "chaoskit"), worker, (), ApiAccess(kube), clock=lambda: at).batched()
    src.out_of_reach, src.elsewhere = frozenset({worker}), through_api
    diagnoser = KubeletDiagnoser()
    report = out_of_reach_noted(diagnoser.report(diagnoser.collect(src, worker), worker))
    assert report.status == "failed", [(f.severity, f.title) for f in report.findings]
    assert any(f.severity == "critical" and "heartbeat" in f.title for f in report.findings), report.findings
