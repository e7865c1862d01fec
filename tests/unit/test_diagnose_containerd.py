"""The container runtime's analysis, per node: recorded `crictl info`, `crictl ps -a` and containerd's journal,
edited into a frozen, stopped or not-ready containerd and a crash-looping container."""

from __future__ import annotations

import copy
import json

from diagnose_evidence import containerd, text, titles

from chaoskit.diagnosers.containerd import ContainerdDiagnoser, ContainerdEvidence
from chaoskit.diagnosers.kit.base import UNCOLLECTED
from chaoskit.diagnosers.kit.sources import Section


def analyze(ev: ContainerdEvidence) -> list[str]:
    return titles(ContainerdDiagnoser().analyze(ev))


def test_healthy_containerd_has_no_findings() -> None:
    report = ContainerdDiagnoser().report(containerd(), "chaoskit-worker")
    assert report.status == "ok" and report.findings == ()
    cri = report.checks[0]
    assert cri.conditions == ("RuntimeReady=True", "NetworkReady=True")


def test_frozen_containerd_is_critical() -> None:
    timed_out = Section('time=... level=fatal msg="validate service connection: ... context deadline exceeded"', 124)
    findings = ContainerdDiagnoser().analyze(containerd(stat="Tsl", info=timed_out))
    assert titles(findings) == ["critical: containerd is stopped on chaoskit-worker (process state Tsl)"]
    assert "PLEG" in findings[0].probable_cause


def test_containerd_not_answering_is_critical() -> None:
    failed = Section(
        'level=fatal msg="validate service connection: validate CRI v1 runtime API for endpoint '
        '\\"unix:///run/containerd/containerd.sock\\": rpc error: code = DeadlineExceeded"',
        1,
    )
    assert analyze(containerd(info=failed)) == ["critical: containerd on chaoskit-worker does not answer CRI calls"]


def test_containerd_stopped_by_systemd_is_critical() -> None:
    gone = Section("", 1)
    assert analyze(containerd(service="inactive", stat="", info=gone)) == [
        "critical: containerd is not running on chaoskit-worker (systemd: inactive)"
    ]


def test_network_not_ready_is_critical() -> None:
    info = json.loads(text("containerd/crictl-info.json"))
    network = next(c for c in info["status"]["conditions"] if c["type"] == "NetworkReady")
    network.update(status=False, reason="NetworkPluginNotReady", message="cni config uninitialized")
    assert analyze(containerd(info=Section(json.dumps(info), 0))) == [
        "critical: container runtime on chaoskit-worker not ready: NetworkReady"
    ]


def test_a_crash_looping_container_is_noted_not_the_runtimes_fault() -> None:
    listing = json.loads(text("containerd/containers.json"))
    crashed = copy.deepcopy(listing["containers"][0])
    crashed.update(id="c0ffee", state="CONTAINER_EXITED", createdAt=str(int(crashed["createdAt"]) + 10**9))
    crashed["annotations"]["io.kubernetes.container.restartCount"] = "5"
    listing["containers"].append(crashed)
    (title,) = analyze(containerd(containers=Section(json.dumps(listing), 0)))
    assert title == (
        "info: 1 container(s) crash-looping on chaoskit-worker: probe-test/web-6cfd75477-q4644/workload (restarts 5)"
    )


def test_an_older_exited_instance_behind_a_running_one_is_no_crash_loop() -> None:
    listing = json.loads(text("containerd/containers.json"))
    old = copy.deepcopy(listing["containers"][0])
    old.update(id="old", state="CONTAINER_EXITED", createdAt=str(int(old["createdAt"]) - 10**9))
    old["annotations"]["io.kubernetes.container.restartCount"] = "7"
    listing["containers"].append(old)
    assert analyze(containerd(containers=Section(json.dumps(listing), 0))) == []


def test_a_look_cut_short_is_no_verdict_on_containerd() -> None:
    cut = "could not run on chaoskit-worker: timed out after 7.9s"
    titles = analyze(containerd(service="could", stat="", unread=cut))
    assert titles == [f"warning: {UNCOLLECTED}"]
