"""The kopf operator beside the cluster (as `chaoskit-operator --context`): an invalid experiment injects nothing;
deleting one mid-fault reverts the fault first. A run with its status, events and metrics, and an operator killed
mid-run, are proven with the operator in the cluster (tests/e2e/test_in_cluster.py), on the same code."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaoskit import workloads
from chaoskit.cluster.experiments import FINAL
from chaoskit.journal import Journal
from chaoskit.seams.kube import Kube
from chaoskit_operator.experiment import resource_path
from tests.e2e.conftest import process_state
from tests.e2e.radius import W1, WATCHES_CLUSTER, WATCHES_INSTALL, namespace, on_node, touches

NS = "chaoskit-operator-e2e"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Operator:
    """`chaoskit-operator` as a user starts it, beside the cluster; restartable, to show what a kill leaves."""

    def __init__(self, cluster: str, kube: Kube, work: Path, namespace: str = NS) -> None:
        self.cluster, self.kube, self.namespace = cluster, kube, namespace
        self.journals, self.log, self.port = work / "journals", work / "operator.log", _free_port()
        self.diagnosis_port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "chaoskit_operator",
                    "--context",
                    f"kind-{self.cluster}",
                    "--journal-dir",
                    str(self.journals),
                    "--metrics-port",
                    str(self.port),
                    "--diagnose-every",  # the diagnosis as series, as the chart's operator.diagnoseEvery serves it
                    "10",
                    "--diagnosis-port",
                    str(self.diagnosis_port),
                    "-n",
                    self.namespace,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            )
        proc = self.proc
        try:
            self.kube.wait("the operator to serve metrics", lambda: proc.poll() is None and self.metrics(), 60)
        except Exception:
            proc.kill()
            raise AssertionError(f"operator did not start:\n{self.log.read_text()[-3000:]}") from None

    def stop(self, sig: signal.Signals = signal.SIGINT) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def metrics(self, port: int | None = None) -> str:
        """The operator's /metrics text (or its diagnosis's on `port`); "" while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port or self.port}/metrics", timeout=5) as answer:
                return str(answer.read().decode())
        except OSError:
            return ""

    def kube_proxy_failed(self) -> set[str]:
        """The nodes whose kube-proxy the operator's last diagnosis judged failed (none before its first look)."""
        failed = re.compile(r'chaoskit_component_status\{component="kube-proxy",node="([^"]+)",status="failed"\} 1')
        return set(failed.findall(self.metrics(self.diagnosis_port)))

    def looks(self) -> float:
        """When the operator's diagnosis last looked (0 before its first)."""
        m = re.search(
            r"^chaoskit_diagnosis_last_look_timestamp_seconds (\S+)$", self.metrics(self.diagnosis_port), re.M
        )
        return float(m.group(1)) if m else 0.0


@pytest.fixture(scope="module")
def operator(cluster: str, kube: Kube, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    op = Operator(cluster, kube, tmp_path_factory.mktemp("operator"))
    kube.apply(workloads.namespace(NS))
    op.start()
    yield op
    if op.proc is None or op.proc.poll() is not None:
        op.start()  # a test left it stopped: it must be there to release the experiments' finalizers
    experiments = f"/apis/chaoskit.dev/v1alpha1/namespaces/{NS}/chaosexperiments"
    for item in kube.get(experiments).get("items", []):
        kube.delete(resource_path(NS, item["metadata"]["name"]))
    kube.wait("experiments to be gone", lambda: not kube.get(experiments).get("items"), 120)
    op.stop()
    kube.delete(f"/api/v1/namespaces/{NS}")
    print(op.log.read_text()[-2000:])


def _experiment(name: str, duration: str, deadline: str | None = None) -> dict[str, Any]:
    step: dict[str, Any] = {"fault": "kube-proxy.freeze", "target": {"node": "worker"}, "duration": duration}
    if deadline:
        step["deadline"] = deadline
    return {
        "apiVersion": "chaoskit.dev/v1alpha1",
        "kind": "ChaosExperiment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"diagnose": False, "steadyState": [{"check": "cluster-healthy", "timeout": "120s"}], "steps": [step]},
    }


def _create(kube: Kube, body: dict[str, Any]) -> str:
    kube.create(f"/apis/chaoskit.dev/v1alpha1/namespaces/{NS}/chaosexperiments", body)
    return resource_path(NS, body["metadata"]["name"])


def _status(kube: Kube, path: str) -> dict[str, Any]:
    found = kube.find(path)
    return dict((found or {}).get("status") or {})


def _final(kube: Kube, path: str, timeout: float) -> dict[str, Any]:
    return dict(kube.wait(f"{path} to finish", lambda: (s := _status(kube, path)).get("phase") in FINAL and s, timeout))


def _reasons(kube: Kube, name: str) -> set[str]:
    events = kube.get(f"/api/v1/namespaces/{NS}/events", fieldSelector=f"involvedObject.name={name}")
    return {e.get("reason", "") for e in events.get("items", [])}


def _kube_proxy_stopped(cluster: str) -> dict[str, bool]:
    return {node: process_state(node, "kube-proxy") == "T" for node in (f"{cluster}-worker", f"{cluster}-worker2")}


@touches(namespace("chaoskit-operator-e2e"), WATCHES_INSTALL)
def test_an_invalid_experiment_is_marked_invalid_and_injects_nothing(operator: Operator, kube: Kube) -> None:
    # a rule across fields, which the CRD's schema cannot say (a bad duration the API server itself refuses)
    path = _create(kube, _experiment("invalid", "60s", "30s"))
    status = _final(kube, path, 60)
    assert status["phase"] == "Invalid"
    assert any(p.startswith("spec.steps[0].deadline:") for p in status["problems"]), status
    assert "Invalid" in _reasons(kube, "invalid")
    assert not list(operator.journals.glob(f"{NS}-invalid-*.jsonl"))


@touches(on_node("kube-proxy", W1), namespace("chaoskit-operator-e2e"), WATCHES_INSTALL, WATCHES_CLUSTER)
def test_deleting_a_running_experiment_reverts_its_fault_before_it_goes(
    operator: Operator, kube: Kube, cluster: str
) -> None:
    # the operator's own diagnosis (--diagnose-every): kube-proxy fine everywhere before, failed where it froze
    first = kube.wait("the operator's diagnosis to look", operator.looks, 90)
    kube.wait("a look after the first", lambda: operator.looks() > first, 60)
    assert operator.kube_proxy_failed() == set(), "the operator's diagnosis failed kube-proxy before any fault"
    path = _create(kube, _experiment("held", "300s", "420s"))
    kube.wait("the freeze to take effect", lambda: "EffectObserved" in _reasons(kube, "held"), 180)
    frozen = {node for node, stopped in _kube_proxy_stopped(cluster).items() if stopped}
    assert frozen
    kube.wait(
        "the operator's diagnosis to fail the frozen kube-proxy", lambda: operator.kube_proxy_failed() == frozen, 60
    )
    t0 = time.monotonic()
    kube.delete(path)
    kube.wait("the experiment to be released", lambda: kube.find(path) is None, 120)
    released = time.monotonic() - t0
    assert not any(_kube_proxy_stopped(cluster).values())
    (journal,) = operator.journals.glob(f"{NS}-held-*.jsonl")
    assert Journal(journal).pending() == []
    print(f"\nexperiment deleted mid-fault: reverted and released after {released:.1f}s")
    # the revert takes seconds; kopf's stock 60 s cancellation polling held the finalizer a minute past it
    assert released < 30, f"released {released:.0f}s after the delete"
