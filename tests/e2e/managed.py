"""What chaoskit does where its agents do not reach the control plane (installed with nodes=workers, as on a managed
cluster): called by the test that installs it so, while that install stands (one install cycle for both)."""

from __future__ import annotations

import json

from chaoskit.cluster.kind import control_plane as kind_control_plane
from chaoskit.diagnosers.kit.managed import OUT_OF_REACH
from chaoskit.seams.kube import Kube
from chaoskit.seams.shell import SubprocessRunner
from tests.e2e.conftest import chaoskit

OUT_OF_REACH_TITLE = "Node-local evidence out of reach (managed control plane)"


def assert_the_managed_view(kube: Kube, cluster: str) -> None:
    """Through the agents alone: the faults it can inject are said, a control-plane one is refused with nothing
    injected, and the diagnosis judges the control plane from what the API shows."""
    listed = chaoskit("--via", "agent", "faults", "list", "--cluster", cluster, "-o", "json")
    assert listed.returncode == 0, listed.stderr[-2000:]
    here = {item["name"]: item["here"] for item in json.loads(listed.stdout)["items"]}
    assert here["kubelet.stop"] == "yes" and here["kube-proxy.freeze"] == "yes"
    assert here["apiserver.down"].startswith("no: no chaoskit agent on a control-plane node"), here

    refused = chaoskit("--via", "agent", "inject", "apiserver.down", "--cluster", cluster, "--duration", "5")
    assert refused.returncode == 2, (refused.returncode, refused.stderr[-2000:])
    assert "no control-plane node chaoskit can reach" in refused.stderr, refused.stderr[-2000:]
    control_plane = kind_control_plane(SubprocessRunner(), cluster)
    manifest = SubprocessRunner().run(
        ["docker", "exec", control_plane, "test", "-f", "/etc/kubernetes/manifests/kube-apiserver.yaml"], check=False
    )
    assert manifest.returncode == 0, "the refused fault moved kube-apiserver's manifest"
    assert kube.raw("/readyz") == "ok"

    looked = chaoskit("--via", "agent", "diagnose", "--cluster", cluster, "-o", "json")
    assert looked.returncode == 0, (_not_ok(looked.stdout), looked.stderr[-2000:])
    assert "no chaoskit agent on the control plane" in looked.stderr
    reports = {(r["component"], r["subject"]): r for r in json.loads(looked.stdout)["diagnosis"]["reports"]}
    # no agent there: its kubelet judged from what the API shows (Ready, its lease), the rest of it noted out of reach
    kubelet = reports[("kubelet", control_plane)]
    assert kubelet["status"] == "ok" and {f["severity"] for f in kubelet["findings"]} <= {"info"}, kubelet["findings"]
    kubelet_checks = {c["check"]: c for c in kubelet["checks"]}
    assert kubelet_checks["node-ready"]["available"] and kubelet_checks["heartbeat"]["available"], kubelet_checks
    assert any(f["title"] == OUT_OF_REACH_TITLE for f in kubelet["findings"]), kubelet["findings"]
    assert ("kube-proxy", control_plane) not in reports  # nothing of its rules is in the API: no look at all
    api = reports[("apiserver", control_plane)]
    checks = {c["check"]: c for c in api["checks"]}
    # what the API server showed of itself, read through the API: readiness, and a metrics window with requests in it
    assert checks["readyz"]["available"] and checks["readyz"]["observed"]["answer"] == "HTTP 200", checks["readyz"]
    assert checks["request-errors"]["available"] and checks["request-errors"]["observed"]["requests"] > 0
    assert not checks["process"]["available"] or checks["process"]["observed"]["state"] == "not read"
    notes = [f for f in api["findings"] if f["title"] == OUT_OF_REACH_TITLE]
    assert notes and all(f["severity"] == "info" for f in notes), api["findings"]
    assert all(OUT_OF_REACH in f["probable_cause"] for f in notes)
    etcd = {c["check"]: c for c in reports[("etcd", control_plane)]["checks"]}
    assert etcd["request-latency"]["available"], etcd["request-latency"]  # the API server's etcd client, via the API


def _not_ok(stdout: str) -> list[str] | str:
    """What a failed look said: each report not ok with its findings (the JSON's tail when it is no document)."""
    try:
        reports = json.loads(stdout)["diagnosis"]["reports"]
    except (ValueError, KeyError, TypeError):
        return stdout[-3000:]
    return [
        f"{r['component']}@{r['subject']} {r['status']}: {f['severity']} {f['title']} ({f['probable_cause']})"
        for r in reports
        if r["status"] != "ok"
        for f in r["findings"]
    ]
