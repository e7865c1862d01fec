"""chaoskit installed in the cluster, as on a cluster it did not build: `chaoskit install`, then ChaosExperiments
applied with kubectl run by the operator's pod, and every node command goes through the node agents over mutual
TLS (no `docker exec`, no pods/exec: the events name the agent, and the operator's pod has no Docker to call)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chaoskit.cluster import install as ops
from chaoskit.cluster import prometheus as prom
from chaoskit.cluster.cache import Cache, default_root
from chaoskit.cluster.experiments import FINAL
from chaoskit.seams.kube import Kube
from chaoskit.seams.shell import SubprocessRunner
from chaoskit_operator.experiment import resource_path
from chaoskit_operator.handlers import STANDING_BY
from tests.e2e.conftest import chaoskit, process_state
from tests.e2e.test_operator import Operator

# the install stands from the first test to the last, and the last breaks the whole control plane through it
pytestmark = pytest.mark.one_hold

NS = "chaoskit-in-cluster-e2e"


def kubectl(cluster: str, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--context", f"kind-{cluster}", *args], input=input, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def installed(cluster: str, kube: Kube) -> Iterator[dict[str, Any]]:
    t0 = time.monotonic()
    done = chaoskit("install", "--cluster", cluster)
    took = time.monotonic() - t0
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    kubectl(cluster, "create", "namespace", NS)
    yield {"took": took, "stdout": done.stdout, "stderr": done.stderr}
    kubectl(cluster, "delete", "chaosexperiments", "--all", "-n", NS, "--wait=true", "--timeout=120s")
    kubectl(cluster, "delete", "namespace", NS, "--wait=false")
    gone = chaoskit("uninstall", "--cluster", cluster)
    assert gone.returncode == 0, gone.stderr


def test_install_runs_an_agent_on_every_node_and_the_operator(installed: dict[str, Any], kube: Kube) -> None:
    print(f"\nchaoskit install took {installed['took']:.0f}s: {installed['stdout'].strip()}")
    assert ops.ready(kube) is None
    pods = kube.get(f"/api/v1/namespaces/{ops.NAMESPACE}/pods", labelSelector="app.kubernetes.io/name=chaoskit-agent")
    assert sorted(p["spec"]["nodeName"] for p in pods["items"]) == sorted(n.name for n in ops.agent_nodes(kube))
    # a second install changes nothing and issues no new certificates
    again = chaoskit("install", "--cluster", "chaoskit")
    assert again.returncode == 0 and "issued a new CA" not in again.stderr, again.stderr[-2000:]


def test_the_operators_permissions_name_every_verb_and_resource(installed: dict[str, Any], cluster: str) -> None:
    """What the API server grants the operator's service account, listed by the API server itself."""
    sa = f"system:serviceaccount:{ops.NAMESPACE}:chaoskit-operator"
    listed = kubectl(cluster, "auth", "can-i", "--list", f"--as={sa}")
    assert listed.returncode == 0, listed.stderr
    header, *lines = listed.stdout.splitlines()
    urls, verbs = header.index("Non-Resource URLs"), header.index("Verbs")
    rows = [(line[:urls].strip(), line[verbs:].strip("[] ").split()) for line in lines if line[:urls].strip()]
    wild = [r for r in rows if "*" in r[0] or "*" in r[1]]  # the non-resource URLs every user may read are left out
    print(f"\nthe operator may: {len(rows)} resource rules, e.g. {rows[:3]}")
    assert rows and not wild, wild
    assert any(r == "chaosexperiments.chaoskit.dev" for r, _ in rows), rows
    assert not any(r == "secrets" for r, _ in rows), "the operator must not read Secrets through the API"


def test_an_agent_runs_in_its_nodes_namespaces_and_refuses_a_peer_without_the_installs_certificate(
    installed: dict[str, Any], cluster: str, kube: Kube
) -> None:
    node = f"{cluster}-worker"
    done = chaoskit(
        "--via",
        "agent",
        "agent",
        "exec",
        "--cluster",
        cluster,
        node,
        "--",
        "sh",
        "-c",
        "cat /etc/hostname; systemctl is-active kubelet",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [node, "active"]  # the node's own hostname and systemd, not the pod's
    address = next(n.address for n in ops.agent_nodes(kube) if n.name == node)
    # from the control-plane node, with curl and no client certificate: the TLS handshake is refused
    refused = subprocess.run(
        [
            "docker",
            "exec",
            f"{cluster}-control-plane",
            "curl",
            "-sSk",
            "--max-time",
            "5",
            "-X",
            "POST",
            "-d",
            '{"argv": ["touch", "/tmp/chaoskit-e2e-refused"]}',
            f"https://{address}/v1/run",
        ],
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0, refused.stdout
    marker = subprocess.run(["docker", "exec", node, "test", "-e", "/tmp/chaoskit-e2e-refused"])
    assert marker.returncode != 0, "a request without the client certificate ran"


def _experiment(name: str) -> str:
    return json.dumps(
        {
            "apiVersion": "chaoskit.dev/v1alpha1",
            "kind": "ChaosExperiment",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "diagnose": False,
                "steadyState": [{"check": "cluster-healthy", "timeout": "120s"}],
                "steps": [{"fault": "kube-proxy.freeze", "target": {"node": "worker"}, "duration": "10s"}],
            },
        }
    )


def _events(kube: Kube, name: str) -> list[str]:
    events = kube.get(f"/api/v1/namespaces/{NS}/events", fieldSelector=f"involvedObject.name={name}")
    return [f"{e.get('reason')}: {e.get('message')}" for e in events.get("items", [])]


def test_an_experiment_applied_with_kubectl_runs_in_the_cluster_through_the_agents(
    installed: dict[str, Any], cluster: str, kube: Kube, tmp_path: Path
) -> None:
    """...and a `chaoskit-operator` started beside it on the host, watching that namespace (a developer's ordinary
    afternoon), stands by while the installed one acts."""
    host = Operator(cluster, kube, tmp_path, namespace=NS)
    host.start()
    try:
        kube.wait("the host's operator to stand by", lambda: STANDING_BY in host.log.read_text(), 60)
        _runs_in_the_cluster(cluster, kube)
    finally:
        host.stop()
    handled = [line for line in host.log.read_text().splitlines() if f"[{NS}/freeze]" in line]
    assert not handled, "the operator on the host acted too:\n" + "\n".join(handled[:10])


def _runs_in_the_cluster(cluster: str, kube: Kube) -> None:
    t0 = time.monotonic()
    applied = kubectl(cluster, "apply", "-f", "-", input=_experiment("freeze"))
    assert applied.returncode == 0, applied.stderr
    path = resource_path(NS, "freeze")
    seen: dict[str, float] = {}

    def final() -> dict[str, Any] | None:
        events = _events(kube, "freeze")
        if "effect" not in seen and any(e.startswith("EffectObserved") for e in events):
            seen["effect"] = time.monotonic() - t0
            seen["stopped"] = process_state(f"{cluster}-worker", "kube-proxy") == "T"
        status = (kube.find(path) or {}).get("status") or {}
        return status if status.get("phase") in FINAL else None

    status = kube.wait("the experiment to finish", final, 300, interval=1)
    events = _events(kube, "freeze")
    print(
        f"\nkubectl apply → effect through the agent {seen.get('effect', -1):.1f}s; finished after "
        f"{time.monotonic() - t0:.1f}s; events: {events}"
    )
    assert status["phase"] == "Passed", (status, events)
    assert any(e.startswith("Armed: ") and "through chaoskit agent" in e for e in events), events
    assert seen.get("stopped"), "kube-proxy was not seen stopped on the worker while the fault held"
    assert process_state(f"{cluster}-worker", "kube-proxy") not in ("T", "")
    no_docker = kubectl(
        cluster,
        "exec",
        "-n",
        ops.NAMESPACE,
        "deploy/chaoskit-operator",
        "--",
        "sh",
        "-c",
        "command -v docker || echo none",
    )
    assert no_docker.stdout.strip() == "none", no_docker.stdout


def _held_experiment(name: str, deadline: str = "420s") -> str:
    return json.dumps(
        {
            "apiVersion": "chaoskit.dev/v1alpha1",
            "kind": "ChaosExperiment",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "diagnose": False,
                "steadyState": [{"check": "cluster-healthy", "timeout": "120s"}],
                "steps": [
                    {
                        "fault": "kube-proxy.freeze",
                        "target": {"node": "worker"},
                        "duration": "300s",
                        "deadline": deadline,
                    }
                ],
            },
        }
    )


def test_an_operator_pod_killed_mid_fault_is_replaced_and_the_new_one_reverts_from_the_clusters_journal(
    installed: dict[str, Any], cluster: str, kube: Kube
) -> None:
    assert kubectl(cluster, "apply", "-f", "-", input=_held_experiment("orphan")).returncode == 0
    kube.wait(
        "the freeze to take effect", lambda: any(e.startswith("EffectObserved") for e in _events(kube, "orphan")), 180
    )
    assert process_state(f"{cluster}-worker", "kube-proxy") == "T"
    t0 = time.monotonic()
    # SIGKILL first (a graceful stop would revert on its way out), then the pod goes with its disk: only the
    # cluster's copy of the journal is left to the new pod
    operator = "python3 -m chaoskit_operator"
    subprocess.run(["docker", "exec", f"{cluster}-control-plane", "pkill", "-KILL", "-f", operator], check=True)
    killed = kubectl(
        cluster,
        "delete",
        "pod",
        "-n",
        ops.NAMESPACE,
        "-l",
        "app.kubernetes.io/name=chaoskit-operator",
        "--grace-period=0",
        "--force",
    )
    assert killed.returncode == 0, killed.stderr
    path = resource_path(NS, "orphan")
    status = kube.wait(
        "the experiment to end",
        lambda: (s := (kube.find(path) or {}).get("status") or {}).get("phase") in FINAL and s,
        240,
        interval=1,
    )
    healed = time.monotonic() - t0
    print(f"\noperator pod force-deleted mid-fault: {status['phase']} after {healed:.1f}s: {status['message']}")
    assert status["phase"] == "Interrupted" and "reverted 1 fault" in status["message"], status
    assert process_state(f"{cluster}-worker", "kube-proxy") not in ("T", "")


DEADLINE = 20  # the freeze shows in 2-4 s, chaoskit and the agent pod are gone 1-2 s later: the rest is the switch's


def test_an_agent_pod_deleted_mid_fault_leaves_the_heal_to_the_switch_in_the_node(
    installed: dict[str, Any], cluster: str, kube: Kube, tmp_path: Any
) -> None:
    node = f"{cluster}-worker"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chaoskit",
            "--via",
            "agent",
            "inject",
            "kube-proxy.freeze",
            "--cluster",
            cluster,
            "--node",
            node,
            "--duration",
            "300",
            "--deadline",
            str(DEADLINE),
            "--journal",
            str(tmp_path / "j.jsonl"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    t0 = time.monotonic()
    kube.wait("kube-proxy frozen on the worker", lambda: process_state(node, "kube-proxy") == "T", 60)
    proc.kill()  # chaoskit gone too: nobody but the node is left to heal it
    proc.wait()
    pods = kube.get(f"/api/v1/namespaces/{ops.NAMESPACE}/pods", labelSelector="app.kubernetes.io/name=chaoskit-agent")
    (pod,) = [p["metadata"]["name"] for p in pods["items"] if p["spec"]["nodeName"] == node]
    assert kubectl(cluster, "delete", "pod", "-n", ops.NAMESPACE, pod, "--grace-period=0", "--force").returncode == 0
    kube.wait("the switch to thaw kube-proxy", lambda: process_state(node, "kube-proxy") not in ("T", ""), 90)
    healed = time.monotonic() - t0
    print(
        f"\nagent pod and chaoskit killed mid-fault: the node's switch healed it {healed:.1f}s after the inject "
        f"(deadline {DEADLINE}s)"
    )
    assert healed <= DEADLINE + 25
    kube.wait("the agent back on the worker", lambda: ops.ready(kube) is None, 120)
    done = chaoskit("--via", "agent", "revert", str(tmp_path / "j.jsonl"), "--cluster", cluster)
    assert done.returncode == 0, done.stdout + done.stderr


def test_chaoskit_run_via_the_operator_follows_the_experiment_to_its_verdict(
    installed: dict[str, Any], cluster: str, tmp_path: Any
) -> None:
    playbook = tmp_path / "freeze.yaml"
    playbook.write_text(
        "apiVersion: chaoskit.dev/v1alpha1\nkind: Playbook\nmetadata: {name: via-operator}\n"
        "spec:\n  diagnose: false\n  workload: {load: {concurrency: 0}}\n  steps:\n    - fault: kube-proxy.freeze\n"
        "      target: {node: worker}\n      duration: 5s\n"
    )  # (a workload: the operator's own RBAC must let it deploy one)
    done = chaoskit("-n", NS, "run", str(playbook), "--via-operator")
    print(done.stderr[-1500:])
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "Passed" in done.stdout and "through chaoskit agent" in done.stderr


def test_prometheus_scrapes_the_operator_through_its_service(
    installed: dict[str, Any], kube: Kube, tmp_path: Any
) -> None:
    tools = prom.install(SubprocessRunner(), Cache(default_root()))
    workdir = tmp_path / "prometheus"
    config = prom.prepare(kube, workdir, None)
    assert "chaoskit-operator" in [j.name for j in config.jobs]
    srv = prom.start(tools, workdir)
    try:
        srv.wait_ready(60)
        t0 = time.monotonic()
        up: list[Any] = []
        while time.monotonic() - t0 < 60 and not up:
            up = [r for r in srv.query('up{job="chaoskit-operator"} == 1')]
            time.sleep(1)
        assert up, srv.query('up{job="chaoskit-operator"}')
        assert srv.query("chaoskit_fault_injections_total"), "the operator's runs are not in Prometheus"
    finally:
        srv.stop()


def control_path(cluster: str) -> list[dict[str, Any]]:
    """One fault per component, those that break the path to the nodes included. The scheduler's outage overlaps
    the kubelet's (nothing is scheduled meanwhile); the controller manager's hang goes alone. The kubelet's is its
    frozen runtime: kubelet.stop waits out the 30 s node grace period for its effect, and reaches the node through
    the same agent. The API server's goes last: its outage costs the controller manager and the scheduler their
    leases, and the kubelet brings them back under its crash-loop back-off, which the steady state after waits out
    (a later step would find no process to break). Each holds until the diagnosis names it, and no longer."""
    return [
        {"fault": "controller-manager.hung", "duration": "1s"},
        {
            "concurrent": [
                {"fault": "kubelet.runtime-unresponsive", "target": {"node": f"{cluster}-worker2"}, "duration": "1s"},
                {"fault": "scheduler.down", "duration": "1s"},
            ]
        },
        {"fault": "apiserver.down", "duration": "1s"},
    ]


def _faults(steps: list[dict[str, Any]]) -> list[str]:
    return [f["fault"] for s in steps for f in s.get("concurrent", [s])]


def test_one_fault_per_component_through_the_agents_with_status_and_events_right(
    installed: dict[str, Any], cluster: str, kube: Kube
) -> None:
    body = {
        "apiVersion": "chaoskit.dev/v1alpha1",
        "kind": "ChaosExperiment",
        "metadata": {"name": "control-path", "namespace": NS},
        "spec": {"steadyState": [{"check": "cluster-healthy", "timeout": "300s"}], "steps": control_path(cluster)},
    }
    t0 = time.monotonic()
    assert kubectl(cluster, "apply", "-f", "-", input=json.dumps(body)).returncode == 0
    path = resource_path(NS, "control-path")
    status = kube.wait(
        "the experiment to finish",
        lambda: (s := (kube.find(path) or {}).get("status") or {}).get("phase") in FINAL and s,
        900,
        interval=2,
    )
    events = _events(kube, "control-path")
    print(f"\ncontrol path through the agents: {status['phase']} after {time.monotonic() - t0:.0f}s")
    for step in status.get("steps", []):
        print(
            f"  {step['fault']}: effect {step.get('effectSeconds')}s, named {step.get('namedSeconds')}s, "
            f"recovered {step.get('recoverySeconds')}s after the revert"
        )
    assert status["phase"] == "Passed", (status, events[-20:])
    assert sorted(s["fault"] for s in status["steps"]) == sorted(_faults(control_path(cluster)))
    for step in status["steps"]:
        assert step["ok"] and step["effectSeconds"] is not None and step["recoverySeconds"] is not None, step
        assert step["factCheck"] == "confirmed", step  # each check said no where it must, in the cluster too
    steps = len(_faults(control_path(cluster)))
    # an event is posted through the API server: those made during its own outage (the effect, and the revert that
    # ends it, posted before the API server is back) may be lost, as any client's are; the status has them
    effects = [e for e in events if e.startswith("EffectObserved")]
    reverts = [e for e in events if e.startswith("Reverted")]
    for fault in _faults(control_path(cluster)):
        if fault != "apiserver.down":
            assert any(fault in e for e in effects), (fault, effects)
            assert any(fault in e for e in reverts), (fault, reverts)
    armed = [e for e in events if "armed dead-man switch" in e]
    assert len(armed) == steps and all("through chaoskit agent" in e for e in armed), armed
