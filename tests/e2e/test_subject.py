"""A user's StatefulSet as a playbook's subject on the real cluster, in one run: found by name with its HPA (named
otherwise) and its Service, scaled out by the load chaoskit sends through that Service, the scale-up measured stage
by stage, and judged by a command probe and by promql probes against a real Prometheus, one of which catches the
fault; chaoskit creates, deletes and leaves changed none of it. (The http and k8s probes: test_example_shop.py.)"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaoskit import workloads
from chaoskit.cluster import prometheus as prom
from chaoskit.cluster.cache import Cache, default_root
from chaoskit.seams.kube import Kube
from chaoskit.seams.shell import SubprocessRunner
from tests.e2e.conftest import chaoskit
from tests.e2e.radius import W2, WORKLOAD, namespace, on_node, touches

pytestmark = pytest.mark.e2e

LEDGER = "ledger"

PLAYBOOK = """\
apiVersion: chaoskit.dev/v1alpha1
kind: Playbook
metadata: {{name: ledger-under-load}}
spec:
  diagnose: false
  subject:
    namespace: {ns}
    statefulSet: ledger
    # chaoskit's load generator through your Service: each request burns 40 ms of the pod's CPU
    load: {{service: ledger, path: "/burn?ms=40", concurrency: 4}}
  probes:
    - name: cluster-answers
      command: {{argv: [{python}, -m, chaoskit, cluster, status, --cluster, {cluster}, -o, json], timeout: 20s}}
      every: 3s
    # kube-proxy frozen on a worker answers no scrape: `up` drops to 0 there while the fault holds
    - name: every-kube-proxy-scraped
      promql: {{query: 'min(up{{job="kube-proxy"}})', url: "{prometheus}", min: 1}}
      every: 1s
      when: [before, during]
    - name: kube-proxy-series
      promql: {{query: 'count(up{{job="kube-proxy"}})', url: "{prometheus}", min: 3}}
      every: 2s
  steps:
    - fault: kube-proxy.freeze
      target: {{node: {cluster}-worker2}}
      # hold 30s: the load lifts the ledger's CPU past its target and the HPA acts (metrics-server's 15 s resolution,
      # then the HPA's next sync) while kube-proxy stays frozen on the other worker; Prometheus, scraping every 5 s
      # with a 5 s timeout, sees the frozen node down within 10 s
      duration: 30s
  measurements:
    - name: scale-up
      type: hpa_scale_up
"""


@pytest.fixture
def prometheus(kube: Kube, tmp_path: Path) -> Iterator[prom.Server]:
    """`chaoskit metrics prometheus up`'s server, scraping every kube-proxy and the control plane."""
    tools = prom.install(SubprocessRunner(), Cache(default_root()))
    prom.prepare(kube, tmp_path / "prometheus", None)
    srv = prom.start(tools, tmp_path / "prometheus")
    try:
        srv.wait_ready(60)
        yield srv
    finally:
        srv.stop()


def _ledger(kube: Kube, ns: str) -> None:
    """A StatefulSet of chaoskit's CPU-burning web server (any image would do), its Service and an HPA on it."""
    web = workloads.web_deployment(ns, LEDGER)
    spec = {**web["spec"], "serviceName": LEDGER, "podManagementPolicy": "Parallel"}
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": web["metadata"], "spec": spec}
    hpa = workloads.hpa(ns, LEDGER, min_replicas=1, max_replicas=3)
    hpa["metadata"]["name"] = "ledger-cpu"  # found through its scaleTargetRef, not by name
    hpa["spec"]["scaleTargetRef"]["kind"] = "StatefulSet"
    for obj in (sts, workloads.service(ns, LEDGER), hpa):
        kube.apply(obj)
    path = f"/apis/apps/v1/namespaces/{ns}/statefulsets/{LEDGER}"
    kube.wait("the ledger to be ready", lambda: (kube.get(path).get("status") or {}).get("readyReplicas") == 1, 120)
    # as a running system is: its HPA has read its pods' CPU once (a new pod has no metrics for its first ~30 s, and
    # until then no load can scale it)
    hpa_path = f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/ledger-cpu"

    def cpu_read() -> bool:
        metrics = (kube.get(hpa_path).get("status") or {}).get("currentMetrics") or []
        return any(m.get("resource", {}).get("current", {}).get("averageUtilization") is not None for m in metrics)

    kube.wait("the ledger's HPA to read its CPU", cpu_read, 120)


@touches(on_node("kube-proxy", W2), namespace("chaoskit-ledger-under-load"), namespace("chaoskit-monitoring"), WORKLOAD)
def test_a_users_statefulset_under_chaoskits_load_is_measured_and_judged_by_command_and_promql_probes(
    kube: Kube, cluster: str, ns: str, prometheus: prom.Server, tmp_path: Path
) -> None:
    _ledger(kube, ns)
    deadline = time.monotonic() + 60
    while not prometheus.query('count(up{job="kube-proxy"} == 1) == 3'):  # every node's kube-proxy scraped once
        assert time.monotonic() < deadline, "Prometheus never scraped every kube-proxy"
        time.sleep(1)
    playbook = tmp_path / "ledger.yaml"
    playbook.write_text(PLAYBOOK.format(ns=ns, python=sys.executable, cluster=cluster, prometheus=prometheus.url))
    done = chaoskit("run", str(playbook), "-o", "json", "--journal", str(tmp_path / "j.jsonl"))
    print(f"\n{done.stderr[-2500:]}")
    rec: dict[str, Any] = json.loads(done.stdout)
    probes = {p["name"]: p for p in rec["probes"]}
    for p in probes.values():
        print(f"{p['name']}: " + "; ".join(f"{ph['phase']} {ph['reason']}" for ph in p["phases"]))
    # the one probe that sees the frozen kube-proxy deviates the run, naming its bound; nothing else failed
    assert done.returncode == 1 and rec["verdict"] == "deviated", (rec["verdict"], rec.get("errors"))
    before, during = probes["every-kube-proxy-scraped"]["phases"]
    assert before["ok"] and not during["ok"]
    assert 'min(up{job="kube-proxy"}) = 0, below its min 1' in during["reason"], during["reason"]
    for name in ("kube-proxy-series", "cluster-answers"):
        assert [p["phase"] for p in probes[name]["phases"]] == ["before", "during", "after"]
        assert all(p["ok"] and p["samples"] >= 1 for p in probes[name]["phases"]), probes[name]["phases"]
    assert rec["steps"][0]["effect_s"] is not None and rec["steps"][0]["recovery_s"] is not None
    assert rec["subject"] == f"StatefulSet {ns}/{LEDGER}, HPA ledger-cpu, Service {LEDGER}"
    # the load reached the ledger through its Service: its CPU rose past the target and the HPA scaled it out
    (m,) = rec["measurements"]
    samples = m["samples"]
    stages = {s["stage"] for s in samples}
    print(
        "ledger scale-up: "
        + "; ".join(f"{stage} max {s['max']:.2f}s" for stage, s in m["summaries"].items() if s.get("max") is not None)
    )
    # (its hpa_decision stage needs our 2 s metrics poll to see the CPU above target before the HPA acts on it,
    # which a 5 s HPA sync sometimes beats: then the stage is missing, never made up)
    assert any(n.startswith("scale-up 1: 1 → ") for n in m["notes"]), m["notes"]
    created = {s["subject"] for s in samples if s["stage"] == "pod_created"}
    assert created and created <= {f"{LEDGER}-1", f"{LEDGER}-2"}, created  # the StatefulSet's own pods
    assert "replicaset_scaled" not in stages  # a StatefulSet creates its pods itself
    assert {"scheduled", "ready", "endpoint_ready", "rules_programmed"} <= stages
    # what chaoskit changed of the ledger: nothing (no scaleUp asked); its objects are all still there
    hpa = kube.get(f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/ledger-cpu")
    assert hpa["spec"]["minReplicas"] == 1
    assert kube.find(f"/apis/apps/v1/namespaces/{ns}/statefulsets/{LEDGER}") is not None
