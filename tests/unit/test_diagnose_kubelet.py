"""kubelet's analysis, per node: the recorded node object, lease, journal, metrics and certificate of a healthy
worker, edited into what kubelet.stop, kubelet.cert-expired, kubelet.disk-pressure and an unresponsive runtime leave."""

from __future__ import annotations

import copy

from diagnose_evidence import DOWN, NO_ANSWER, edit_metric, http, iso_at, kubelet, obj, text, titles

from chaoskit.diagnosers.kit.base import status_of
from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.diagnosers.kubelet import KubeletDiagnoser, KubeletEvidence
from chaoskit.seams.scrape import Metrics


def analyze(ev: KubeletEvidence) -> list[str]:
    return titles(KubeletDiagnoser().analyze(ev))


def node(**conditions: tuple[str, str, str]) -> Fetched:
    """The recorded node with some conditions replaced: type=(status, reason, message)."""
    n = copy.deepcopy(obj("kubelet/node.json"))
    for c in n["status"]["conditions"]:
        if c["type"] in conditions:
            c["status"], c["reason"], c["message"] = conditions[c["type"]]
    return Fetched(n)


def journal_line(ev: KubeletEvidence, message: str, seconds_before: float = 5) -> str:
    at = iso_at(ev.collected_at - seconds_before).replace("Z", "+0000")
    return f"{at} chaoskit-worker kubelet[198]: {message}"


def pleg_starting(ev: KubeletEvidence) -> str:
    """The line every kubelet logs from its start to PLEG's first relist, 30 s before the look."""
    return journal_line(
        ev,
        'E1130 kubelet.go:2452] "Skipping pod synchronization" err="[PLEG is not healthy: '
        'pleg has yet to be successful]"',
        30,
    )


def starts(found: list[str], expected: list[str]) -> bool:
    return len(found) == len(expected) and all(f.startswith(e) for f, e in zip(found, expected, strict=True))


def test_healthy_kubelet_has_no_findings() -> None:
    report = KubeletDiagnoser().report(kubelet(), "chaoskit-worker")
    assert report.status == "ok" and report.findings == ()
    assert [c.check for c in report.checks] == [
        "service",
        "node-ready",
        "heartbeat",
        "api-reach",
        "pressure",
        "client-certificate",
        "pleg",
        "permissions",
        "journal",
    ]


def test_stopped_kubelet_is_failed_by_systemd_node_status_and_heartbeat() -> None:
    ev = kubelet()
    ev = kubelet(
        service="inactive",
        healthz=NO_ANSWER,
        healthz_verbose=NO_ANSWER,
        metrics=Metrics.unavailable("refused"),
        node_obj=node(Ready=("Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")),
        collected_at=ev.collected_at + 90,
    )
    findings = KubeletDiagnoser().analyze(ev)
    assert status_of(findings) == "failed"
    assert starts(
        titles(findings),
        [
            "critical: kubelet is not running on chaoskit-worker (systemd: inactive)",
            "critical: Node chaoskit-worker is NotReady: kubelet stopped posting status",
            "critical: kubelet on chaoskit-worker stopped heartbeating: node lease renewed",
        ],
    )
    assert "NodeStatusUnknown" in findings[1].title


def test_expired_client_certificate_explains_the_restart_loop() -> None:
    ev = kubelet()
    lines = [
        journal_line(
            ev,
            "E1130 04:10:01.402211    5123 bootstrap.go:266] part of the existing bootstrap client "
            "certificate in /etc/kubernetes/kubelet.conf is expired: 2026-11-29 04:05:00 +0000 UTC",
        ),
        journal_line(
            ev,
            'E1130 04:10:01.402388    5123 run.go:72] "command failed" err="failed to run Kubelet: '
            "unable to load bootstrap kubeconfig: stat /etc/kubernetes/bootstrap-kubelet.conf: no such file "
            'or directory"',
        ),
    ]
    ev = kubelet(
        service="activating",
        healthz=NO_ANSWER,
        client_not_after=ev.collected_at - 86400,
        journal=text("kubelet/journal.txt") + "\n".join(lines) + "\n",
    )
    findings = KubeletDiagnoser().analyze(ev)
    assert [f.title.split(" (")[0] for f in findings] == [
        "kubelet is not running on chaoskit-worker",
        "kubelet client certificate on chaoskit-worker expired at 2026-11-29T03:54:06Z",
    ]
    assert "client certificate has expired" in findings[0].probable_cause
    assert any("is expired" in line for line in findings[0].evidence[0].log_lines)


def test_disk_pressure_is_critical_with_the_disk_usage() -> None:
    n = node(DiskPressure=("True", "KubeletHasDiskPressure", "kubelet has disk pressure"))
    n.data["spec"]["taints"] = [{"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}]
    findings = KubeletDiagnoser().analyze(kubelet(node_obj=n, disk_used_percent=95.0))
    assert titles(findings) == ["critical: DiskPressure on chaoskit-worker: kubelet has disk pressure"]
    assert "/var/lib/kubelet 95% used" in findings[0].probable_cause
    assert "node.kubernetes.io/disk-pressure" in findings[0].probable_cause


def test_disk_pressure_beside_a_disk_barely_used_names_the_threshold_not_the_disk() -> None:
    n = node(DiskPressure=("True", "KubeletHasDiskPressure", "kubelet has disk pressure"))
    set_high = {"nodefs.available": "99%", "imagefs.available": "0%"}
    (f,) = KubeletDiagnoser().analyze(kubelet(node_obj=n, disk_used_percent=1.0, eviction_hard=set_high))
    assert f.title == (
        "DiskPressure on chaoskit-worker: threshold nodefs.available 99% ≥ free 99%: the threshold, not the disk"
    )
    assert f.entity == "node/chaoskit-worker" and "default 10%" in f.remediation[0]
    # the stock threshold and a full disk: the disk
    full = KubeletDiagnoser().analyze(
        kubelet(node_obj=n, disk_used_percent=95.0, eviction_hard={"nodefs.available": "10%"})
    )
    assert titles(full) == ["critical: DiskPressure on chaoskit-worker: kubelet has disk pressure"]


def test_a_nearly_full_kubelet_filesystem_is_a_warning() -> None:
    assert analyze(kubelet(disk_used_percent=90.0)) == ["warning: /var/lib/kubelet on chaoskit-worker is 90% full"]


def test_pleg_not_healthy_is_critical_and_points_at_the_runtime() -> None:
    ev = kubelet()
    message = "PLEG is not healthy: pleg was last seen active 3m12.5s ago; threshold is 3m0s"
    line = journal_line(ev, f'E1130 04:20:01.1 198 kubelet.go:2482] "Skipping pod synchronization" err="{message}"')
    last_seen = edit_metric(text("kubelet/metrics.prom"), "kubelet_pleg_last_seen_seconds", "", ev.collected_at - 192)
    ev = kubelet(
        node_obj=node(Ready=("False", "KubeletNotReady", message)),
        journal=text("kubelet/journal.txt") + line,
        metrics=Metrics.parse(last_seen),
    )
    findings = KubeletDiagnoser().analyze(ev)
    assert starts(
        titles(findings),
        [
            "critical: Node chaoskit-worker is NotReady: PLEG is not healthy",
            "critical: PLEG is not healthy on chaoskit-worker (last active 192s ago)",
        ],
    )
    assert "container runtime" in findings[1].probable_cause
    assert any("chaoskit diagnose containerd" in step for step in findings[1].remediation)


def test_pleg_lagging_half_a_minute_is_a_warning() -> None:
    ev = kubelet()
    lagging = edit_metric(text("kubelet/metrics.prom"), "kubelet_pleg_last_seen_seconds", "", ev.collected_at - 45)
    assert analyze(kubelet(metrics=Metrics.parse(lagging))) == [
        "warning: PLEG on chaoskit-worker last active 45s ago (relists every 1 s)"
    ]


def test_pleg_errors_from_minutes_ago_do_not_count() -> None:
    ev = kubelet()
    old = journal_line(ev, "E1130 kubelet.go:2482] PLEG is not healthy: pleg was last seen active 3m1s ago", 600)
    assert analyze(kubelet(journal=old + "\n")) == []


def test_the_pleg_complaint_every_kubelet_start_logs_does_not_count_once_pleg_relisted() -> None:
    ev = kubelet()
    start = pleg_starting(ev)
    active = edit_metric(text("kubelet/metrics.prom"), "kubelet_pleg_last_seen_seconds", "", ev.collected_at - 1)
    assert analyze(kubelet(journal=start + "\n", metrics=Metrics.parse(active))) == []


def test_the_start_complaint_of_a_ready_node_does_not_count_when_no_metric_says_pleg_relisted() -> None:
    # through a worker's agent the kubelet's metrics are out of reach: the node's Ready says PLEG relisted, since
    # kubelet posts Ready only once PLEG has (CI: a kubelet restarted by an earlier test was called critical)
    ev = kubelet()
    start = pleg_starting(ev)
    blind = Metrics.unavailable("no client certificate on this node")
    assert analyze(kubelet(journal=start + "\n", metrics=blind)) == []
    never = node(Ready=("False", "KubeletNotReady", "PLEG is not healthy: pleg has yet to be successful"))
    assert "PLEG is not healthy" in " ".join(analyze(kubelet(journal=start + "\n", metrics=blind, node_obj=never)))
    stalled = journal_line(ev, "E1130 kubelet.go:2482] PLEG is not healthy: pleg was last seen active 3m1s ago", 20)
    assert "PLEG is not healthy" in " ".join(analyze(kubelet(journal=stalled + "\n", metrics=blind)))


def test_a_stuck_sync_loop_is_critical() -> None:
    body = text("kubelet/healthz-verbose.txt").replace("[+]syncloop ok", "[-]syncloop failed: reason withheld")
    assert analyze(kubelet(healthz_verbose=http(body, 500))) == [
        "critical: kubelet on chaoskit-worker is running but its sync loop is stuck ([-]syncloop)"
    ]


def test_api_unavailable_leaves_node_local_checks_standing() -> None:
    report = KubeletDiagnoser().report(kubelet(node_obj=DOWN, lease=DOWN), "chaoskit-worker")
    assert report.status == "ok"
    assert [f.title for f in report.findings] == [
        "API-side evidence unavailable (node-ready)",
        "API-side evidence unavailable (heartbeat)",
    ]
    pressure = next(c for c in report.checks if c.check == "pressure")
    assert pressure.observed["disk_used_percent"] == 1.0


def forbidden_as(ev: KubeletEvidence, who: str) -> KubeletEvidence:
    line = journal_line(
        ev,
        'E1206 10:12:19.8 198 reflector.go:205] "Failed to watch" err="failed to list *v1.Service: services is '
        f'forbidden: User \\"{who}\\" cannot list resource \\"services\\" in API group \\"\\" at the cluster scope"',
    )
    return kubelet(journal=text("kubelet/journal.txt") + line)


def test_a_kubelet_refused_with_another_nodes_name_blames_its_credentials_not_the_process() -> None:
    (f,) = KubeletDiagnoser().analyze(forbidden_as(kubelet(), "system:node:chaoskit-worker2"))
    assert f.title == (
        "kubelet on chaoskit-worker is forbidden: system:node:chaoskit-worker2 cannot list services (403)"
    )
    assert f.entity == "user/system:node:chaoskit-worker2" and "belongs to another node" in f.probable_cause


def test_a_kubelet_refused_under_its_own_name_points_at_the_authorizer() -> None:
    (f,) = KubeletDiagnoser().analyze(forbidden_as(kubelet(), "system:node:chaoskit-worker"))
    assert "--authorization-mode lacks Node" in f.probable_cause


def test_the_node_authorizers_routine_refusal_of_an_object_gone_is_no_finding() -> None:
    ev = kubelet()
    line = journal_line(
        ev,
        'E1206 10:31:19.2 132 reflector.go:205] "Failed to watch" err="failed to list *v1.ConfigMap: configmaps '
        '\\"kube-root-ca.crt\\" is forbidden: User \\"system:node:chaoskit-worker\\" cannot list resource '
        '\\"configmaps\\" in API group \\"\\" in the namespace \\"gone\\": no relationship found between node '
        "'chaoskit-worker' and this object\"",
    )
    assert analyze(kubelet(journal=text("kubelet/journal.txt") + line)) == []


def test_refusals_before_kubelet_changed_its_certificate_are_no_finding_and_after_it_are() -> None:
    """TLS bootstrap: kubelet's first events go out as system:anonymous, refused, until its client certificate
    arrives; a look soon after a node joins must not blame credentials kubelet no longer uses."""
    ev = kubelet()
    anonymous = (
        'E1206 19:58:03.963044 192 event.go:359] "Server rejected event (will not retry!)" err="events '
        '\\"chaoskit-worker.18eec26f18277f2f\\" is forbidden: User \\"system:anonymous\\" cannot patch resource '
        '\\"events\\" in API group \\"\\" in the namespace \\"default\\""'
    )
    rotated = (
        'I1206 19:58:04.404442 192 transport.go:147] "Certificate rotation detected, shutting down client '
        'connections to start using new credentials"'
    )
    before = [journal_line(ev, anonymous, 6), journal_line(ev, rotated, 5)]
    assert analyze(kubelet(journal=text("kubelet/journal.txt") + "\n".join(before))) == []
    after = "\n".join([*before, journal_line(ev, anonymous, 4)])
    (f,) = KubeletDiagnoser().analyze(kubelet(journal=text("kubelet/journal.txt") + after))
    assert f.entity == "user/system:anonymous"
