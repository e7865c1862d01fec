"""A whole diagnosis through the seams' fakes: every collector runs its real commands against answers recorded on
the healthy cluster, with the API server down. The API server's report fails on node-local evidence; every other
component is judged on its own evidence and only says which API-side evidence it could not read."""

from __future__ import annotations

import re
import shlex
import threading
from typing import Any

import pytest
from diagnose_evidence import FrozenKube, text
from test_dns import RECORDED

from chaoskit.diagnosers import run
from chaoskit.diagnosers.kit import sources
from chaoskit.diagnosers.run import diagnose
from chaoskit.env import Env
from chaoskit.seams.kube import FakeKube, KubeError
from chaoskit.seams.nodeexec import FakeNodeExec
from chaoskit.seams.shell import Completed, FakeRunner

NODES = ["chaoskit-control-plane", "chaoskit-worker", "chaoskit-worker2"]
PARKED = "/etc/kubernetes/chaoskit-parked/kube-apiserver.yaml"
_JOB = re.compile(r"sh -c ('(?:[^']|'\"'\"')*')")  # a job: its commands as one quoted argument
_COMMAND = re.compile(r'^\( (.*?) \) >>"\$d/(\d+)" 2>&1; r=\$\?', re.S | re.M)  # a command and its output file
_SECTION = re.compile(r"^echo '@@chaoskit-section (\S+)' >\"\$d/(\d+)\"", re.M)  # a section, its file


class ApiDown(FakeKube):
    """The kubeconfig's API server refuses every connection."""

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        self.calls.append((method, path))
        raise KubeError(
            f"{method} {path}: MaxRetryError: (Caused by NewConnectionError(': [Errno 111] Connection refused'))"
        )

    def raw(self, path: str) -> str:
        return str(self.request("GET", path))


def answer(name: str, cmd: str) -> tuple[str, int]:
    """What a node prints for one command of a diagnoser's script, with kube-apiserver's manifest parked."""
    if "kube-apiserver" in cmd:
        return {"process": ("", 1), "manifest": (PARKED, 0), "containers": ('{"containers": []}', 0)}.get(name, ("", 1))
    if ":6443/" in cmd:
        return "curl: (7) Failed to connect to 127.0.0.1 port 6443: Connection refused\n@@http 000", 7
    if name == "process":
        return "Ssl", 0
    if name == "manifest":
        process = re.search(r"-name '([a-z-]+)\.yaml", cmd)
        return f"/etc/kubernetes/manifests/{process.group(1) if process else 'x'}.yaml", 0
    if name.startswith("lookup:"):  # CoreDNS answers from what it knows while the API server is down
        return RECORDED[name.removeprefix("lookup:")], 0
    if name in ("containers", "logs", "journal", "nft", "etcd_filter"):
        return ('{"containers": []}' if name == "containers" else ""), 0
    recorded = {
        "health": text("etcd/health.json") + "\n@@http 200",
        "readyz": text("etcd/readyz.txt") + "\n@@http 200",
        "etcd_before": text("etcd/metrics-1.prom"),
        "etcd_after": text("etcd/metrics-2.prom"),
        "service": "active\n0",
        "cert": text("kubelet/cert.txt"),
        "disk": text("kubelet/df.txt"),
        "mode": "iptables",
        "metrics": text("kube-proxy/metrics.prom"),
        "now": text("kube-proxy/node-time.txt"),
        "configz": text("kube-proxy/configz.json"),
        "iptables": text("kube-proxy/rules-iptables.txt"),
        "info": text("containerd/crictl-info.json"),
    }
    if name == "healthz":
        return ('{"healthy":true}' if ":10256" in cmd else "ok") + "\n@@http 200", 0
    if name == "metrics" and "10249" not in cmd:
        return "curl: (22) The requested URL returned error: 401", 22  # kubelet/scheduler authz needs the API
    return recorded.get(name, ""), 0 if name in recorded or name == "wait" else 1


def respond(argv: tuple[str, ...]) -> Completed:
    script = argv[-1]
    out = []
    jobs = [shlex.split(job)[0] for job in _JOB.findall(script)]
    commands = {file: cmd for job in jobs for cmd, file in _COMMAND.findall(job)}
    for name, file in _SECTION.findall(script):
        cmd = commands[file]
        output, rc = answer(name.rsplit("/", 1)[-1], cmd)  # a batch prefixes each asker's names
        out.append(f"@@chaoskit-section {name}\n{output}\n@@chaoskit-rc {rc}")
    return Completed(argv, 0, "\n".join(out) + "\n")


def test_with_the_api_server_down_only_the_api_server_fails() -> None:
    env = Env(ApiDown(), FakeNodeExec(FakeRunner(responder=respond)), "chaoskit")
    said: list[str] = []
    d = diagnose(env, NODES[0], NODES, say=said.append)
    # the /readyz probe or the quorum read asked beside it, whichever is refused first, says why
    assert any(re.match(r"API server unreachable \(GET /\S+: \[Errno 111\] Connection refused\)", s) for s in said)
    status = {(r.component, r.subject): r.status for r in d.reports}
    assert status.pop(("apiserver", "chaoskit-control-plane")) == "failed"
    assert set(status.values()) == {"ok"}, {k: v for k, v in status.items() if v != "ok"}
    # five cluster reports (the control plane's four, the metrics pipeline); kubelet, kube-proxy, containerd, reverts
    # per node
    assert len(d.reports) == 7 + 3 * 4  # the control plane's seven (workloads and dns among them), each node's four
    api = d.reports[0]
    assert api.findings[0].title.startswith("kube-apiserver is not running: its static-pod manifest")
    assert (
        f"mv {PARKED} /etc/kubernetes/manifests/kube-apiserver.yaml on chaoskit-control-plane"
        in api.findings[0].remediation
    )
    scheduler = next(r for r in d.reports if r.component == "scheduler")
    assert {f.title for f in scheduler.findings} == {
        "API-side evidence unavailable (leader-lease)",
        "API-side evidence unavailable (pending-pods)",
    }
    assert d.duration_s < 5  # no API read waited for a timeout


def test_only_the_components_asked_for_are_diagnosed() -> None:
    env = Env(ApiDown(), FakeNodeExec(FakeRunner(responder=respond)), "chaoskit")
    d = diagnose(env, NODES[0], NODES, ["containerd"])
    assert [(r.component, r.subject) for r in d.reports] == [("containerd", n) for n in NODES]
    assert d.ok


def test_a_hung_api_server_and_a_hung_node_cost_the_budget_and_no_more(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "GRACE", 0.05)
    monkeypatch.setattr(sources, "SCRIPT_MARGIN", 0.05)
    release = threading.Event()

    def worker2_hangs(argv: tuple[str, ...]) -> Completed:
        if argv[0] == "chaoskit-worker2":  # its docker exec never returns
            release.wait(30)
        return respond(argv)

    env = Env(FrozenKube(release), FakeNodeExec(FakeRunner(responder=worker2_hangs)), "chaoskit")
    try:
        d = diagnose(env, NODES[0], NODES, api_timeout=0.1, budget=1.0)
        assert not release.is_set()  # the diagnosis returned while the API and a node still hung
        cut = [r for r in d.reports if r.subject == "chaoskit-worker2"]
        assert [r.component for r in cut] == ["kubelet", "kube-proxy", "containerd", "reverts"]
        assert all("not collected within the 1s budget" in r.findings[0].probable_cause for r in cut)
        assert d.top_findings()[0].title.startswith("kube-apiserver is not running")
        # the probe and the quorum read beside it went unanswered; no later read waited out its own timeout
        assert sorted(env.kube.calls) == [("GET", "/api/v1/nodes"), ("GET", "/readyz")]
    finally:
        release.set()


def test_a_node_out_of_reach_is_reported_on_by_the_diagnosers_that_judge_it_from_the_api() -> None:
    from chaoskit.diagnosers.kit.base import diagnoser_class
    from chaoskit.diagnosers.kit.managed import MANAGED
    from chaoskit.diagnosers.run import _subjects, components

    components()  # registers the diagnosers
    workers, cp = ("chaoskit-worker", "chaoskit-worker2"), frozenset({"chaoskit-control-plane"})
    assert _subjects(diagnoser_class("kubelet"), workers, "chaoskit-control-plane", cp) == (
        "chaoskit-control-plane",
        *workers,
    )
    assert _subjects(diagnoser_class("kube-proxy"), workers, "chaoskit-control-plane", cp) == workers
    assert _subjects(diagnoser_class("kubelet"), workers, MANAGED, frozenset({MANAGED})) == workers  # no node at all
    assert _subjects(diagnoser_class("etcd"), workers, MANAGED, frozenset({MANAGED})) == (MANAGED,)
