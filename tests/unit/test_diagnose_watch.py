"""`chaoskit diagnose --watch`: the diff between two looks, the loop that prints only what changed, and what the
command refuses beside it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import click
import pytest
from click.testing import CliRunner

from chaoskit.cli import cli
from chaoskit.cli.diagnose_watch import INTERVAL, JsonLines, Lines, refuse, stamp, watch
from chaoskit.diagnosers.changes import CollectionChanged, FindingChanged, StatusChanged, changes, shape
from chaoskit.diagnosers.kit.base import UNCOLLECTED, ComponentReport, Diagnosis, Evidence, Finding, Severity, status_of
from chaoskit.errors import UsageError
from chaoskit.seams.nodeexec import Node

CP, WORKER = "chaoskit-control-plane", "chaoskit-worker"
T0 = 1_700_000_000.0


def finding(component: str, title: str, severity: Severity = "warning", check: str = "check") -> Finding:
    return Finding(severity, component, title, "because", (Evidence(check, "source"),))


def uncollected(component: str, check: str) -> Finding:
    return Finding("warning", component, UNCOLLECTED, f"could not read {check}", (Evidence(check, "src"),))


def report(component: str, node: str, *found: Finding) -> ComponentReport:
    return ComponentReport(component, node, status_of(found), found, ())


def look(*reports: ComponentReport, at: float = T0) -> Diagnosis:
    return Diagnosis("chaoskit", reports, at, 2.0)


def healthy(at: float = T0) -> Diagnosis:
    return look(report("etcd", CP), report("kubelet", CP), report("kubelet", WORKER), at=at)


# the diff


def test_the_first_look_is_every_component_and_every_finding() -> None:
    pleg = finding("kubelet", f"PLEG on {WORKER} last active 12s ago")
    first = look(
        report("etcd", CP),
        report("kubelet", WORKER, pleg),
        report("containerd", WORKER, uncollected("containerd", "crictl")),
    )
    assert changes(None, first) == [
        StatusChanged("etcd", CP, None, "ok"),
        StatusChanged("kubelet", WORKER, None, "degraded"),
        StatusChanged("containerd", WORKER, None, "unknown"),
        FindingChanged("kubelet", WORKER, "appeared", pleg),
        CollectionChanged("containerd", WORKER, ("crictl",), False, "could not read crictl"),
    ]


def test_nothing_changed_is_no_change() -> None:
    assert changes(healthy(), healthy(T0 + 7)) == []


def test_a_status_change_and_the_finding_behind_it() -> None:
    stopped = finding("kubelet", f"kubelet is not running on {WORKER} (systemd: inactive)", "critical")
    broken = look(report("etcd", CP), report("kubelet", CP), report("kubelet", WORKER, stopped))
    assert changes(healthy(), broken) == [
        StatusChanged("kubelet", WORKER, "ok", "failed"),
        FindingChanged("kubelet", WORKER, "appeared", stopped),
    ]
    assert changes(broken, healthy()) == [
        StatusChanged("kubelet", WORKER, "failed", "ok"),
        FindingChanged("kubelet", WORKER, "cleared", stopped),
    ]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            f"PLEG on {WORKER} last active 12s ago (relists every 1 s)",
            f"PLEG on {WORKER} last active 17s ago (relists every 1 s)",
        ),
        ("the API server's etcd requests are slow: p99 0.53s", "the API server's etcd requests are slow: p99 1.20s"),
        (f"/var/lib/kubelet on {WORKER} is 91% full", f"/var/lib/kubelet on {WORKER} is 93.5% full"),
        (
            f"kube-proxy on {WORKER} is unhealthy: /healthz HTTP 503",
            f"kube-proxy on {WORKER} is unhealthy: /healthz no answer (timed out)",
        ),
    ],
)
def test_the_same_finding_with_another_measured_number_is_no_change(before: str, after: str) -> None:
    assert shape(before) == shape(after)
    one = look(report("kubelet", WORKER, finding("kubelet", before)))
    other = look(report("kubelet", WORKER, finding("kubelet", after)))
    assert changes(one, other) == []


def test_another_finding_on_the_same_component_is_a_change() -> None:
    memory = finding("kubelet", f"MemoryPressure on {WORKER}: kubelet has insufficient memory")
    disk = finding("kubelet", f"DiskPressure on {WORKER}: kubelet has disk pressure")
    assert [
        c.how
        for c in changes(look(report("kubelet", WORKER, memory)), look(report("kubelet", WORKER, disk)))
        if isinstance(c, FindingChanged)
    ] == ["appeared", "cleared"]


def test_the_same_finding_at_another_severity_says_what_it_was() -> None:
    warned = finding("etcd", "etcd database at 81% of its quota", "warning")
    critical = finding("etcd", "etcd database at 96% of its quota", "critical")
    assert changes(look(report("etcd", CP, warned)), look(report("etcd", CP, critical))) == [
        StatusChanged("etcd", CP, "degraded", "failed"),
        FindingChanged("etcd", CP, "severity", critical, "warning"),
    ]


def test_evidence_uncollected_and_back_is_a_change_of_collection_not_a_finding() -> None:
    missing = look(
        report("etcd", CP), report("kubelet", CP), report("kubelet", WORKER, uncollected("kubelet", "node-lease"))
    )
    assert changes(healthy(), missing) == [
        StatusChanged("kubelet", WORKER, "ok", "unknown"),
        CollectionChanged("kubelet", WORKER, ("node-lease",), False, "could not read node-lease"),
    ]
    assert changes(missing, healthy()) == [
        StatusChanged("kubelet", WORKER, "unknown", "ok"),
        CollectionChanged("kubelet", WORKER, ("node-lease",), True),
    ]


def test_api_side_evidence_unavailable_is_collection_too() -> None:
    lease = Evidence("heartbeat", "GET lease", {"error": "refused"}, available=False)
    skipped = Finding(
        "info", "kubelet", "API-side evidence unavailable (heartbeat)", "the API server did not answer", (lease,)
    )
    assert changes(look(report("kubelet", WORKER)), look(report("kubelet", WORKER, skipped))) == [
        CollectionChanged("kubelet", WORKER, ("heartbeat",), False, "the API server did not answer")
    ]


def test_a_node_that_went_is_a_status_change_to_none() -> None:
    gone = look(report("etcd", CP), report("kubelet", CP))
    assert changes(healthy(), gone) == [StatusChanged("kubelet", WORKER, "ok", None)]


# the loop


def discard(_: str) -> None:
    pass


class Looks:
    """A fake diagnose: the given looks in turn, each five seconds after the last; a fake sleep that records."""

    def __init__(self, *looks: Diagnosis) -> None:
        self._looks: Iterator[Diagnosis] = iter(looks)
        self.slept: list[float] = []

    def __call__(self) -> Diagnosis:
        return next(self._looks)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def broken(at: float, seconds: int = 12) -> Diagnosis:
    pleg = finding("kubelet", f"PLEG on {WORKER} last active {seconds}s ago")
    return look(report("etcd", CP), report("kubelet", CP), report("kubelet", WORKER, pleg), at=at)


def test_the_loop_prints_a_summary_then_only_what_changed() -> None:
    looks = Looks(healthy(T0), healthy(T0 + 7), broken(T0 + 14), broken(T0 + 21, 19), healthy(T0 + 28))
    out: list[str] = []
    code = watch(looks, interval=5, count=5, printer=Lines(out.append), sleep=looks.sleep)
    at = [stamp(T0 + s) for s in (0, 14, 28)]
    assert "".join(out).splitlines() == [
        f"{at[0]} chaoskit: ok (2s)",
        f"  etcd     {CP}  ok",
        f"  kubelet  {CP}  ok",
        f"  kubelet  {WORKER}         ok",
        f"{at[1]} kubelet on {WORKER}: ok → degraded",
        f"{at[1]} + warning kubelet: PLEG on {WORKER} last active 12s ago",
        f"{at[2]} kubelet on {WORKER}: degraded → ok",
        f"{at[2]} - warning kubelet: PLEG on {WORKER} last active 19s ago",
    ]
    assert looks.slept == [5, 5, 5, 5] and code == 0


def test_the_first_look_lists_its_findings_naming_the_node_where_the_title_does_not() -> None:
    out: list[str] = []
    first = look(report("kubelet", CP), report("kubelet", WORKER, finding("kubelet", "the node lease is stale")))
    watch(Looks(first), interval=5, count=1, printer=Lines(out.append))
    assert out[-1] == f"  + warning kubelet on {WORKER}: the node lease is stale\n"


def test_checks_of_one_component_that_went_together_are_one_line() -> None:
    why = "chaoskit could not look at kube-apiserver " + "x" * 200
    gone = [Finding("warning", "apiserver", UNCOLLECTED, why, (Evidence(c, "src"),)) for c in ("process", "readyz")]
    out: list[str] = []
    looks = Looks(
        look(report("apiserver", CP)),
        look(report("apiserver", CP, *gone), at=T0 + 7),
        look(report("apiserver", CP), at=T0 + 14),
    )
    watch(looks, interval=5, count=3, printer=Lines(out.append), sleep=looks.sleep)
    lines = "".join(out).splitlines()
    assert lines[-3].startswith(f"{stamp(T0 + 7)} apiserver on {CP}: process, readyz not collected (chaoskit could")
    assert lines[-3].endswith("x…)") and len(lines[-3]) < 200
    assert lines[-1] == f"{stamp(T0 + 14)} apiserver on {CP}: process, readyz collected again"


def test_count_stops_and_the_exit_code_is_the_last_looks() -> None:
    looks = Looks(healthy(T0), broken(T0 + 7), healthy(T0 + 14))
    assert watch(looks, interval=2, count=2, printer=Lines(discard), sleep=looks.sleep) == 1
    assert looks.slept == [2]


def test_ctrl_c_ends_with_the_last_looks_exit_code_and_before_any_look_is_passed_on() -> None:
    def interrupted(_: float) -> None:
        raise KeyboardInterrupt

    assert watch(Looks(broken(T0)), interval=5, count=None, printer=Lines(discard), sleep=interrupted) == 1

    def never() -> Diagnosis:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        watch(never, interval=5, count=None, printer=Lines(discard))


def test_on_a_tty_a_look_without_change_rewrites_one_heartbeat_line() -> None:
    out: list[str] = []
    looks = Looks(healthy(T0), healthy(T0 + 7), healthy(T0 + 14), broken(T0 + 21))
    watch(looks, interval=5, count=4, printer=Lines(out.append, tty=True), sleep=looks.sleep)
    heartbeats = [s for s in out if "no change" in s]
    assert len(heartbeats) == 2 and all(s.startswith("\r\x1b[K") and not s.endswith("\n") for s in heartbeats)
    assert out[-2].startswith("\r\x1b[K") and "ok → degraded" in click.unstyle(out[-2])  # overwrites the heartbeat


def test_json_lines_one_change_a_line_with_its_look() -> None:
    out: list[str] = []
    looks = Looks(healthy(T0), healthy(T0 + 7), broken(T0 + 14))
    watch(looks, interval=5, count=3, printer=JsonLines(out.append), sleep=looks.sleep)
    lines = [json.loads(line) for line in "".join(out).splitlines()]
    assert [(d["look"], d["change"]) for d in lines] == [(1, "status")] * 3 + [(3, "status"), (3, "finding")]
    assert lines[-1] | {"at": T0 + 14, "status": "degraded", "how": "appeared", "severity": "warning"} == lines[-1]
    assert lines[-1]["title"] == f"PLEG on {WORKER} last active 12s ago" and lines[0]["before"] is None


# the command


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> list[Diagnosis]:
    """The command against a fake cluster whose looks are the returned list, in turn."""
    from chaoskit.cli import diagnose as cmd

    queue: list[Diagnosis] = []

    class Nodes:
        def list_nodes(self) -> list[Node]:
            return [Node(CP, "control-plane"), Node(WORKER, "worker")]

    monkeypatch.setattr(cmd, "cluster_env", lambda *_, **__: SimpleNamespace(kube=None, nodes=Nodes()))
    monkeypatch.setattr(cmd, "run_diagnosis", lambda *_, **__: queue.pop(0))
    return queue


def test_the_command_prints_json_lines_and_exits_with_the_last_look(cluster: list[Diagnosis]) -> None:
    cluster += [healthy(T0), broken(T0 + 7)]
    done = CliRunner().invoke(cli, ["diagnose", "--watch", "0", "--count", "2", "-o", "json"])
    assert done.exit_code == 1, done.output
    assert [json.loads(line)["look"] for line in done.stdout.splitlines()] == [1, 1, 1, 2, 2]


def test_a_bare_watch_takes_the_default_interval(monkeypatch: pytest.MonkeyPatch, cluster: list[Diagnosis]) -> None:
    from chaoskit.cli import diagnose_watch

    cluster += [healthy(T0)]
    seen: list[float] = []

    def watch(*_: object, interval: float, **__: object) -> int:
        seen.append(interval)
        return 0

    monkeypatch.setattr(diagnose_watch, "watch", watch)
    assert CliRunner().invoke(cli, ["diagnose", "kubelet", "--watch"]).exit_code == 0
    assert seen == [INTERVAL]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--watch", "--html", "d.html"], "--html write(s) one diagnosis"),
        (["--watch", "--junit", "d.xml", "--output-file", "d.json"], "--output-file, --junit write(s)"),
        (["--watch", "-o", "html"], "-o html is one report"),
        (["--watch", "-o", "markdown"], "-o markdown is one report"),
        (["--count", "3"], "add --watch"),
    ],
)
def test_what_writes_one_diagnosis_is_refused_beside_watch(
    cluster: list[Diagnosis], args: list[str], said: str
) -> None:
    done = CliRunner().invoke(cli, ["diagnose", *args])
    assert isinstance(done.exception, UsageError) and done.exception.exit_code == 2
    assert said in str(done.exception)


def test_a_record_is_refused_beside_watch(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--record write"):
        refuse(5.0, None, "table", {"--output-file": None, "--record": tmp_path / "run.json"})
    assert refuse(2.0, 3, "json", {"--output-file": None}) == 2.0


def test_a_component_after_a_bare_watch_is_a_usage_error_that_says_where_it_goes() -> None:
    done = CliRunner().invoke(cli, ["diagnose", "--watch", "kubelet"])
    assert done.exit_code == 2 and "diagnose kubelet --watch" in done.output
