"""`chaoskit diagnose --serve`: where it listens, what it refuses beside it, a loop whose looks never overlap, and a
real scrape of the series on loopback."""

from __future__ import annotations

import threading
import urllib.request
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from chaoskit.cli import cli
from chaoskit.cli.diagnose_serve import ADDRESS, INTERVAL, host_port, refuse
from chaoskit.diagnosers.kit.base import ComponentReport, Diagnosis
from chaoskit.errors import UsageError
from chaoskit.exporters.diagnosis import PORT, Latest, keep_looking, serve
from chaoskit.seams.nodeexec import Node

CP = "chaoskit-control-plane"
T0 = 1_700_000_000.0


def healthy(at: float = T0) -> Diagnosis:
    return Diagnosis("chaoskit", (ComponentReport("etcd", CP, "ok", (), ()),), at, 1.5)


@pytest.mark.parametrize(
    ("addr", "where"),
    [(ADDRESS, ("0.0.0.0", PORT)), ("127.0.0.1:9999", ("127.0.0.1", 9999)), ("9100", ("0.0.0.0", 9100))],
)
def test_the_address_is_host_and_port_or_a_port(addr: str, where: tuple[str, int]) -> None:
    assert host_port(addr) == where


@pytest.mark.parametrize("addr", ["localhost", ":0", ":70000", "host:port"])
def test_an_address_without_a_port_is_refused(addr: str) -> None:
    with pytest.raises(UsageError, match=r"\[HOST\]:PORT"):
        host_port(addr)


def test_what_writes_one_diagnosis_cannot_go_with_serve() -> None:
    assert refuse(None, None, {"--watch": 5.0}) is None
    with pytest.raises(UsageError, match="--interval is --serve's"):
        refuse(None, 10.0, {})
    with pytest.raises(UsageError, match="--watch, --html cannot go with --serve"):
        refuse(ADDRESS, None, {"--watch": 5.0, "--html": "x.html", "--junit": None})


def test_each_look_starts_after_the_last_ended_and_a_failed_look_keeps_serving() -> None:
    shown, said, waits = list[Diagnosis](), list[str](), list[float]()
    queue: list[Diagnosis | Exception] = [healthy(T0), RuntimeError("api down"), healthy(T0 + 30)]
    looks = iter(queue)

    def look() -> Diagnosis:
        got = next(looks)
        if isinstance(got, Exception):
            raise got
        return got

    class Clock(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            waits.append(timeout or 0.0)
            return len(waits) == 3  # stop after the third look

    keep_looking(look, shown.append, 30.0, Clock(), said.append)
    assert [d.collected_at for d in shown] == [T0, T0 + 30]
    assert said == ["look failed: RuntimeError: api down"]
    assert waits == [30.0, 30.0, 30.0]


def test_a_scrape_reads_the_last_look() -> None:
    latest = Latest(30.0)
    server, _ = serve(latest, 0, "127.0.0.1")
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        assert urllib.request.urlopen(url, timeout=5).read() == b""  # nothing before the first look ends
        latest.set(healthy())
        text = urllib.request.urlopen(url, timeout=5).read().decode()
    finally:
        server.shutdown()
    assert 'chaoskit_component_status{component="etcd",node="chaoskit-control-plane",status="ok"} 1.0' in text
    assert "chaoskit_diagnosis_duration_seconds 1.5" in text


def test_the_command_serves_with_the_default_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    from chaoskit.cli import diagnose as cmd

    class Nodes:
        def list_nodes(self) -> list[Node]:
            return [Node(CP, "control-plane")]

    seen: list[object] = []
    monkeypatch.setattr(cmd, "cluster_env", lambda *_, **__: SimpleNamespace(kube=None, nodes=Nodes()))
    monkeypatch.setattr(cmd, "run_diagnosis", lambda *_, **__: healthy())
    monkeypatch.setattr(
        cmd, "serve_diagnoses", lambda look, where, interval, say: seen.extend([look(), where, interval])
    )
    done = CliRunner().invoke(cli, ["diagnose", "--serve"])
    assert done.exit_code == 0, done.output
    assert seen == [healthy(), ("0.0.0.0", PORT), None]
    assert INTERVAL == 30.0
    refused = CliRunner().invoke(cli, ["diagnose", "--serve", "--watch", "5"])
    assert isinstance(refused.exception, UsageError)
    assert "cannot go with --serve" in str(refused.exception)
