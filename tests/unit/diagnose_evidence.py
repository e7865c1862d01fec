"""Evidence recorded from the healthy kind cluster (tests/unit/data/evidence, see its README), as each diagnoser's
evidence object, plus the edits that turn it into what a fault leaves behind."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from chaoskit.components.common import MANIFESTS
from chaoskit.components.kube_proxy import min_sync_period
from chaoskit.diagnosers.apiserver import ApiServerEvidence
from chaoskit.diagnosers.containerd import ContainerdEvidence
from chaoskit.diagnosers.controller_manager import ControllerManagerEvidence
from chaoskit.diagnosers.etcd import EtcdEvidence
from chaoskit.diagnosers.kit.base import Finding
from chaoskit.diagnosers.kit.common import HttpAnswer
from chaoskit.diagnosers.kit.sources import Fetched, Section
from chaoskit.diagnosers.kit.staticpod import ProcessState
from chaoskit.diagnosers.kube_proxy import KubeProxyEvidence
from chaoskit.diagnosers.kubelet import KubeletEvidence
from chaoskit.diagnosers.kubelet.evidence import used_percent
from chaoskit.diagnosers.scheduler import SchedulerEvidence
from chaoskit.model.timeline import api_time
from chaoskit.seams.certs import parse_not_after
from chaoskit.seams.kube import FakeKube, KubeError
from chaoskit.seams.scrape import Metrics

DATA = Path(__file__).parent / "data" / "evidence"
CP, WORKER = "chaoskit-control-plane", "chaoskit-worker"
API_DOWN = "API server unreachable: GET /readyz: [Errno 111] Connection refused"
DOWN = Fetched(error=API_DOWN)
RECORDED = 1796010840.0  # 2026-11-30T03:54:00Z, when the files were recorded


class FrozenKube(FakeKube):
    """A frozen API server (or etcd behind it): every request hangs until the test sets `release`."""

    def __init__(self, release: threading.Event | None = None) -> None:
        super().__init__()
        self.release = release or threading.Event()

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        self.calls.append((method, path))
        self.release.wait(30)
        raise KubeError(f"{method} {path}: released")

    def raw(self, path: str) -> str:
        return str(self.request("GET", path))


def text(rel: str) -> str:
    return (DATA / rel).read_text()


@cache
def metrics(rel: str) -> Metrics:
    """A recorded scrape, parsed once per test session (the API server's is large)."""
    return Metrics.parse(text(rel))


def obj(rel: str) -> Any:
    return json.loads(text(rel))


def http(body: str, code: int = 200, rc: int = 0) -> HttpAnswer:
    return HttpAnswer(code, body.strip(), rc)


NO_ANSWER = HttpAnswer(0, "curl: (7) Failed to connect to 127.0.0.1 port 6443: Connection refused", 7)
TIMED_OUT = HttpAnswer(0, "curl: (28) Operation timed out after 10001 milliseconds with 0 bytes received", 28)


def process(
    name: str,
    stat: str = "Ssl",
    *,
    manifests: tuple[str, ...] | None = None,
    log: str = "",
    container: str = "CONTAINER_RUNNING",
    restarts: int = 0,
) -> ProcessState:
    found = (f"{MANIFESTS}/{name}.yaml",) if manifests is None else manifests
    return ProcessState(name, stat, found, container, restarts, log)


def iso_at(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def titles(findings: list[Finding]) -> list[str]:
    return [f"{f.severity}: {f.title}" for f in findings]


def lease_time(rel: str) -> float:
    t = api_time(obj(rel)["spec"]["renewTime"])
    assert t is not None
    return t


def edit_metric(text_: str, name: str, labels: str, value: float) -> str:
    """Set the value of one series (by its exact label text), or add it when it is not there."""
    line = f"{name}{{{labels}}}" if labels else name
    pattern = re.compile(rf"^{re.escape(line)} \S+$", re.M)
    return pattern.sub(f"{line} {value!r}", text_) if pattern.search(text_) else f"{text_}{line} {value!r}\n"


def slow_histogram(text_: str, name: str, count: int, at_least: float, seconds_each: float) -> str:
    """Add `count` observations of `seconds_each` to an unlabelled histogram (to every bucket from `at_least`)."""
    out = []
    for line in text_.splitlines():
        m = re.match(rf'^{name}_bucket\{{le="([^"]+)"\}} (\S+)$', line)
        if m and float(m.group(1)) >= at_least:
            line = f'{name}_bucket{{le="{m.group(1)}"}} {float(m.group(2)) + count}'
        elif line.startswith(f"{name}_count "):
            line = f"{name}_count {float(line.split()[1]) + count}"
        elif line.startswith(f"{name}_sum "):
            line = f"{name}_sum {float(line.split()[1]) + count * seconds_each}"
        out.append(line)
    return "\n".join(out) + "\n"


# --- per component: the healthy evidence as recorded; tests replace() what a fault changes ---


def apiserver(**changes: Any) -> ApiServerEvidence:
    certs = parse_not_after(text("apiserver/certs.txt"))
    ev = ApiServerEvidence(
        node=CP,
        collected_at=RECORDED,
        readyz=http(text("apiserver/readyz.txt")),
        livez=http(text("apiserver/livez.txt")),
        served_not_after=certs["serving"],
        file_not_after={k: v for k, v in certs.items() if k != "serving"},
        metrics_before=metrics("apiserver/metrics-1.prom"),
        metrics_after=metrics("apiserver/metrics-2.prom"),
        window_s=5.0,
        process=process("kube-apiserver", log=text("apiserver/log.txt")),
        etcd_filter_rules=(),
    )
    return replace(ev, **changes)


def etcd(**changes: Any) -> EtcdEvidence:
    ev = EtcdEvidence(
        node=CP,
        health=http(text("etcd/health.json")),
        readyz=http(text("etcd/readyz.txt")),
        metrics_before=Metrics.parse(text("etcd/metrics-1.prom")),
        metrics_after=Metrics.parse(text("etcd/metrics-2.prom")),
        api_before=Metrics.parse(text("etcd/apiserver-1.prom")),
        api_after=Metrics.parse(text("etcd/apiserver-2.prom")),
        window_s=5.0,
        process=process("etcd"),
    )
    return replace(ev, **changes)


def scheduler(**changes: Any) -> SchedulerEvidence:
    ev = SchedulerEvidence(
        node=CP,
        collected_at=lease_time("scheduler/lease.json") + 1,
        healthz=http(text("scheduler/healthz.txt")),
        metrics=Metrics.parse(text("scheduler/metrics.prom")),
        process=process("kube-scheduler"),
        pending=Fetched({"items": []}),
        events=Fetched(obj("scheduler/events.json")),
        lease=Fetched(obj("scheduler/lease.json")),
        nodes=Fetched(obj("scheduler/nodes.json")),
    )
    return replace(ev, **changes)


def controller_manager(**changes: Any) -> ControllerManagerEvidence:
    ev = ControllerManagerEvidence(
        node=CP,
        collected_at=lease_time("controller-manager/lease.json") + 1,
        healthz=http(text("controller-manager/healthz.txt")),
        metrics=Metrics.parse(text("controller-manager/metrics.prom")),
        process=process("kube-controller-manager"),
        lease=Fetched(obj("controller-manager/lease.json")),
        deployments=Fetched(obj("controller-manager/deployments.json")),
        hpas=Fetched({"items": []}),
    )
    return replace(ev, **changes)


def kubelet(**changes: Any) -> KubeletEvidence:
    ev = KubeletEvidence(
        node=WORKER,
        collected_at=lease_time("kubelet/lease.json") + 2,
        service="active",
        restarts=0,
        unread="",
        healthz=http("ok"),
        healthz_verbose=http(text("kubelet/healthz-verbose.txt")),
        metrics=Metrics.parse(text("kubelet/metrics.prom")),
        client_not_after=parse_not_after(text("kubelet/cert.txt"))["client"],
        disk_used_percent=used_percent(text("kubelet/df.txt")),
        journal=text("kubelet/journal.txt"),
        node_obj=Fetched(obj("kubelet/node.json")),
        lease=Fetched(obj("kubelet/lease.json")),
    )
    return replace(ev, **changes)


def kube_proxy(**changes: Any) -> KubeProxyEvidence:
    ev = KubeProxyEvidence(
        node=WORKER,
        node_time=float(text("kube-proxy/node-time.txt")),
        mode=text("kube-proxy/mode.txt").strip(),
        healthz=http(text("kube-proxy/healthz.json")),
        metrics=Metrics.parse(text("kube-proxy/metrics.prom")),
        min_sync_period=min_sync_period(text("kube-proxy/configz.json")),
        rules=text("kube-proxy/rules-iptables.txt"),
        rules_unread="",
        process=process("kube-proxy", manifests=()),
        services=Fetched(obj("kube-proxy/services.json")),
        slices=Fetched(obj("kube-proxy/endpointslices.json")),
    )
    ev = replace(ev, process=replace(ev.process, manifests=None))
    return replace(ev, **changes)


def containerd(**changes: Any) -> ContainerdEvidence:
    ev = ContainerdEvidence(
        node=WORKER,
        info=Section(text("containerd/crictl-info.json"), 0),
        service="active",
        stat="Ssl",
        containers=Section(text("containerd/containers.json"), 0),
        journal=text("containerd/journal.txt"),
    )
    return replace(ev, **changes)
