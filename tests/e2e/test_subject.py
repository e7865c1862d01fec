"""A user's StatefulSet as a playbook's subject on the real cluster: found by name with its HPA (named otherwise) and
its Service, scaled out by the load chaoskit sends through that Service, the scale-up measured stage by stage, a
command probe judged in every phase; chaoskit creates, deletes and leaves changed none of it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from chaoskit import workloads
from chaoskit.cluster.kube import Kube
from tests.e2e.conftest import chaoskit

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
      command: {{argv: [{python}, -m, chaoskit, cluster, status, --name, {cluster}, -o, json], timeout: 20s}}
      every: 3s
  steps:
    - fault: kube-proxy.freeze
      target: {{node: worker2}}
      # hold 30s: the load lifts the ledger's CPU past its target and the HPA acts (metrics-server's 15 s resolution,
      # then the HPA's next sync) while kube-proxy stays frozen on the other worker
      duration: 30s
  measurements:
    - name: scale-up
      type: hpa_scale_up
"""


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


def test_a_users_statefulset_is_scaled_by_chaoskits_load_through_its_service_and_measured(
    kube: Kube, cluster: str, ns: str, tmp_path: Path
) -> None:
    _ledger(kube, ns)
    playbook = tmp_path / "ledger.yaml"
    playbook.write_text(PLAYBOOK.format(ns=ns, python=sys.executable, cluster=cluster))
    done = chaoskit("run", str(playbook), "-o", "json", "--journal", str(tmp_path / "j.jsonl"))
    rec: dict[str, Any] = json.loads(done.stdout)
    print(f"\n{done.stderr[-2500:]}")
    assert done.returncode == 0, (rec["verdict"], rec.get("errors"), rec.get("failures"))
    assert rec["subject"] == f"StatefulSet {ns}/{LEDGER}, HPA ledger-cpu, Service {LEDGER}"
    # the load reached the ledger through its Service: its CPU rose past the target and the HPA scaled it out
    (m,) = rec["measurements"]
    samples = m["samples"]
    stages = {s["stage"] for s in samples}
    decided = [s for s in samples if s["stage"] == "hpa_decision"]
    print(f"ledger scale-up: {sorted(stages)}; " + "; ".join(
        f"{stage} max {s['max']:.2f}s" for stage, s in m["summaries"].items() if s.get("max") is not None))  # fmt: skip
    assert decided, m["notes"]
    created = {s["subject"] for s in samples if s["stage"] == "pod_created"}
    assert created and created <= {f"{LEDGER}-1", f"{LEDGER}-2"}, created  # the StatefulSet's own pods
    assert "replicaset_scaled" not in stages  # a StatefulSet creates its pods itself
    assert {"scheduled", "ready", "endpoint_ready", "rules_programmed"} <= stages
    (probe,) = rec["probes"]
    assert [p["phase"] for p in probe["phases"]] == ["before", "during", "after"]
    assert all(p["ok"] and p["samples"] >= 1 for p in probe["phases"]), probe["phases"]
    # what chaoskit changed of the ledger: nothing (no scaleUp asked); its objects are all still there
    hpa = kube.get(f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/ledger-cpu")
    assert hpa["spec"]["minReplicas"] == 1
    assert kube.find(f"/apis/apps/v1/namespaces/{ns}/statefulsets/{LEDGER}") is not None
