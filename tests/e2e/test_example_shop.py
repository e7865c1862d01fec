"""The example shop gated as a user gates their own app: examples/ci/gate.sh (the one step of the CI workflow
example) on the real cluster, then what it left: probes judged per phase, the score, JUnit and the HTML report, the
HPA stages of the shop's scale-up, the shop's own HPA put back. Then a broken SLO named with its figures, and the
pytest plugin's fixtures on the real cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from junitparser import Failure, JUnitXml

from chaoskit.model.moments import epoch
from chaoskit.seams.kube import Kube
from tests.e2e.conftest import process_state, took

# the gate's shop and its suite's record stand from the first test to the last
pytestmark = pytest.mark.one_hold

REPO = Path(__file__).resolve().parents[2]
SHOP_HPA = "/apis/autoscaling/v2/namespaces/shop/horizontalpodautoscalers/prices"


@pytest.fixture(scope="module")
def gate(cluster: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    out = tmp_path_factory.mktemp("gate")
    kube = Kube.connect(context=f"kind-{cluster}")
    if kube.find("/api/v1/namespaces/shop") is not None:  # a shop an earlier gate left keeps its HPA's last scale
        kube.delete("/api/v1/namespaces/shop", propagation="Background")
        kube.wait("an earlier shop to be gone", lambda: kube.find("/api/v1/namespaces/shop") is None, 180)
    env = {**os.environ, "CHAOSKIT": str(Path(sys.executable).parent / "chaoskit")}
    done = subprocess.run(
        [str(REPO / "examples/ci/gate.sh"), str(out)], cwd=REPO, env=env, capture_output=True, text=True, timeout=1500
    )
    print(f"\n--- examples/ci/gate.sh (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-5000:]}")
    record = json.loads((out / "record.json").read_text()) if (out / "record.json").stat().st_size else {}
    yield {"rc": done.returncode, "out": out, "record": record}
    kube.delete("/api/v1/namespaces/shop", propagation="Background")


def _runs(gate: dict[str, Any]) -> dict[str, Any]:
    return {r["playbook"]: r for r in gate["record"]["runs"]}


def test_the_gate_passes_the_shop_with_every_probe_phase_held_and_puts_its_hpa_back(
    gate: dict[str, Any], kube: Kube
) -> None:
    assert gate["rc"] == 0, gate["record"].get("runs")
    runs = _runs(gate)
    assert set(runs) == {"shop-scheduler-down", "shop-kube-proxy-frozen"}
    assert gate["record"]["score"] == 100 and all(r["score"] == 100 for r in runs.values())
    assert runs["shop-scheduler-down"]["subject"] == "Deployment shop/prices, HPA prices, Service prices"
    for r in runs.values():
        for probe in r["probes"]:
            for phase in probe["phases"]:
                assert phase["ok"] and phase["samples"] >= 1, (r["playbook"], probe["name"], phase)
                figures = (
                    f"success {phase['success_rate']}%, p50 {phase['latency']['p50'] * 1000:.0f}ms, p99 "
                    f"{phase['latency']['p99'] * 1000:.0f}ms"
                    if probe["kind"] == "http"
                    else phase["reason"]
                )
                print(f"{r['playbook']} probe {probe['name']} {phase['phase']}: {phase['samples']} samples, {figures}")
    http = next(p for p in runs["shop-kube-proxy-frozen"]["probes"] if p["kind"] == "http")
    assert len(http["samples"]) >= 60  # every 250 ms through a 12 s hold and the phases around it
    hpa = kube.get(SHOP_HPA)
    assert hpa["spec"]["minReplicas"] == 2, "the shop's HPA was not put back"  # the playbook raised it to 4
    for name in ("prices", "storefront"):
        assert kube.find(f"/apis/apps/v1/namespaces/shop/deployments/{name}") is not None


def _measurement(gate: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in _runs(gate)["shop-scheduler-down"]["measurements"] if m["name"] == name)


def test_the_shops_scale_up_under_the_scheduler_outage_is_timed_stage_by_stage(gate: dict[str, Any]) -> None:
    summaries = _measurement(gate, "scale-up")["summaries"]
    for stage, s in summaries.items():
        print(f"shop-scheduler-down {stage}: p50 {s.get('p50')} max {s.get('max')} (n={s.get('count')})")
    # the raise is acted on at the HPA's next sync (up to 15 s), then the new pods wait for the scheduler's return:
    # scheduling, milliseconds otherwise, is the longest stage of every pod
    per_pod = ("pod_created", "scheduled", "containers_started", "ready", "endpoint_ready")
    assert summaries["scheduled"]["max"] >= 3
    assert max(per_pod, key=lambda stage: summaries[stage]["max"]) == "scheduled"
    assert summaries["total"]["max"] <= 120


def test_the_rule_sync_of_the_shops_own_service_is_measured_on_every_node_by_its_rules(gate: dict[str, Any]) -> None:
    m = _measurement(gate, "rule-sync")
    programmed = [s for s in m["samples"] if s["stage"] == "rules_programmed"]
    changes = {s["run"] for s in programmed}
    print(
        f"\nshop-scheduler-down rule sync of Service shop/prices: {len(changes)} changes, rules_programmed "
        f"{sorted(round(took(s), 3) for s in programmed)}s; notes {m['notes'][:2]}"
    )
    # the two new prices pods, each programmed on every node (a change may carry both when they got Ready together)
    assert changes and len(programmed) == 3 * len(changes), m["notes"]
    assert {s["subject"].split("@")[1] for s in programmed} == set(m["extra"]["nodes"])
    # prices answers with a price, not its pod's name: only the rules tell when the change is programmed
    assert not [s for s in m["samples"] if s["stage"] == "traffic_follows"]
    assert any("traffic_follows not measured" in n for n in m["notes"])
    assert all(0 <= took(s) <= 5 and s["precision"] > 0 for s in programmed), programmed


def test_the_gate_leaves_junit_with_probe_cases_and_the_score_and_an_html_report(gate: dict[str, Any]) -> None:
    suites = {s.name: s for s in JUnitXml.fromfile(str(gate["out"] / "junit.xml"))}
    frozen = {c.name: c for c in suites["shop-kube-proxy-frozen"]}
    assert {
        "probe storefront before",
        "probe storefront during",
        "probe storefront after",
        "probe storefront effect",
    } <= set(frozen)
    assert not any(isinstance(r, Failure) for c in frozen.values() for r in c.result)
    assert {p.name: p.value for p in suites["shop-scheduler-down"].properties()}["resilience_score"] == "100"
    page = (gate["out"] / "report.html").read_text()
    assert page.count('<svg class="probe"') == 3 and "Resilience score: <strong>100</strong>" in page


FLUSHED = """\
apiVersion: chaoskit.dev/v1alpha1
kind: Playbook
metadata: {name: shop-rules-flushed}
spec:
  diagnose: false
  subject: {namespace: shop, deployment: storefront}
  probes:
    - name: storefront-from-worker
      http: {url: "http://storefront.shop.svc.cluster.local/", timeout: 1s, node: worker}
      every: 250ms
      slo: {successRate: 99}
      when: [before, during]
  steps:
    - fault: kube-proxy.flush-rules
      target: {node: worker}
      duration: 5s  # the probe fails from the flush on: 20 samples, well under its 99%
"""


def test_a_broken_slo_deviates_the_run_naming_the_probe_the_phase_when_and_by_how_much(
    gate: dict[str, Any], run_playbook: Any, tmp_path: Path
) -> None:
    path = tmp_path / "flushed.yaml"
    path.write_text(FLUSHED)
    rec = run_playbook(path)  # the pytest plugin's fixture
    assert rec["verdict"] == "deviated" and rec["exit_code"] == 1, rec["errors"]
    (probe,) = rec["probes"]
    before, during = probe["phases"]
    print(f"\nflushed Service rules on the probe's node: before {before['reason']}; during {during['reason']}")
    assert before["ok"] and not during["ok"]
    assert during["reason"].startswith("success ") and "< 99%" in during["reason"]
    (window,) = rec["probe_windows"]["during"]
    assert epoch(window[0]) <= epoch(during["first_failed_at"]) <= epoch(window[1])
    assert rec["score"] < 100


def test_inject_holds_a_fault_only_inside_its_block(gate: dict[str, Any], inject: Any) -> None:
    with inject("kube-proxy.freeze", node="worker") as injected:
        assert process_state(injected.node, "kube-proxy") == "T"
    assert process_state(injected.node, "kube-proxy") not in ("T", "")


USER_TEST = """
def test_the_shop_with_kube_proxy_frozen(inject):
    with inject("kube-proxy.freeze", node="worker"):
        assert False, "pretend the shop stopped answering"
"""


def test_a_users_failing_test_shows_the_diagnosis_of_the_broken_component(gate: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_TEST)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_user.py",
            f"--junitxml={tmp_path / 'junit.xml'}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    print(done.stdout[-3000:])
    assert done.returncode == 1
    cluster = gate["record"]["cluster"]
    assert f"chaoskit diagnosis with kube-proxy.freeze in place on {cluster}-worker:" in done.stdout
    assert f"kube-proxy@{cluster}-worker: failed" in done.stdout
    assert process_state(f"{cluster}-worker", "kube-proxy") not in ("T", "")  # reverted after the diagnosis
