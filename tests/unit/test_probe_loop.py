"""The in-node probe's request loop, run for real by bash against local HTTP servers: what it prints per round."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from chaoskit.measurements.probe import (
    FAILED,
    REQUESTS_PER_ROUND,
    AnswerSeen,
    RoundSeen,
    Seen,
    parse_line,
    probe_cpu,
    probe_script,
)


class Named(BaseHTTPRequestHandler):
    status = 200
    body = b"web-7f9c-abcde\n"

    def do_GET(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


class Failing(Named):
    status = 503


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[int]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), request.param)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()


def run(port: int, seconds: float = 0.8) -> list[Seen]:
    """The probe's output over `seconds`; then its whole process group ends (its loops run until stopped)."""
    script = probe_script("ns", "web", "127.0.0.1", port, failures=True)
    proc = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True)
    threading.Timer(seconds, os.killpg, (proc.pid, signal.SIGKILL)).start()
    out, _ = proc.communicate()
    return [s for line in out.splitlines() if (s := parse_line("n1", line)) is not None]


@pytest.mark.parametrize("server", [Named], indirect=True)
def test_each_round_asks_four_times_and_names_the_pod_that_answered(server: int) -> None:
    seen = run(server)
    rounds = [s for s in seen if isinstance(s, RoundSeen)]
    answers = [s for s in seen if isinstance(s, AnswerSeen)]
    assert len(rounds) >= 3  # a round, then a 0.1 s pause
    assert {a.pod for a in answers} == {"web-7f9c-abcde"} and len(answers) >= 4 * (len(rounds) - 1)
    assert all(a.at >= rounds[0].at for a in answers)


@pytest.mark.parametrize("server", [Failing], indirect=True)
def test_an_http_error_is_no_answer_and_counts_as_failed_when_sent(server: int) -> None:
    seen = run(server)
    rounds = {s.at for s in seen if isinstance(s, RoundSeen)}
    failed = [s for s in seen if isinstance(s, AnswerSeen)]
    assert failed and all(f.pod == FAILED and f.at in rounds for f in failed)


def test_a_request_that_hangs_is_cut_off_at_one_second_and_the_rounds_go_on() -> None:
    with socket.socket() as listener:  # accepts connections (the kernel does) and never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        seen = run(listener.getsockname()[1], seconds=2.3)
    rounds = sorted(s.at for s in seen if isinstance(s, RoundSeen))
    failed = [s for s in seen if isinstance(s, AnswerSeen)]
    assert len(rounds) >= 2 and 1.0 <= rounds[1] - rounds[0] < 1.5
    assert len(failed) >= 4 and all(f.pod == FAILED for f in failed)


class Late(Named):
    """Answers around the watchdog's second, some requests just before it and some just after."""

    def do_GET(self) -> None:
        time.sleep(random.uniform(0.9, 1.1))
        super().do_GET()


@pytest.mark.parametrize("server", [Late], indirect=True)
def test_each_request_counts_once_either_answered_or_failed(server: int) -> None:
    seen = run(server, seconds=5.5)
    starts = sorted(s.at for s in seen if isinstance(s, RoundSeen))
    per_round = dict.fromkeys(starts[:-1], 0)  # the last round may be cut off by the end of the run
    for s in seen:
        if isinstance(s, AnswerSeen):
            start = s.at if s.pod == FAILED else max(t for t in starts if t <= s.at)
            if start in per_round:
                per_round[start] += 1
    assert len(per_round) >= 3 and set(per_round.values()) == {REQUESTS_PER_ROUND}, per_round


def test_the_probe_s_cost_is_read_from_its_shells_own_and_waited_for_cpu() -> None:
    stat = (
        "412 (bash) S 1 412 412 0 -1 4194560 900 0 0 0 30 12 250 90 20 0 1 0 100 4000000 800\n"
        "413 (my probe) S 412 412 412 0 -1 4194560 900 0 0 0 5 5 0 0 20 0 1 0 100 4000000 800\n"
        "100\n"
    )
    assert probe_cpu(stat) == (30 + 12 + 250 + 90 + 5 + 5) / 100
    assert probe_cpu("100\n") is None, "no shell found: no figure, not zero"


def test_probes_on_one_node_pace_each_other_and_a_killed_ones_share_is_dropped(tmp_path: Path) -> None:
    script = probe_script("ns", "web", "127.0.0.1", 9, pace_dir=str(tmp_path))
    prelude = script.split("; ask() {", 1)[0]  # up to and with pace(), without the loops

    def paced() -> str:
        return subprocess.run(
            ["bash", "-c", f"{prelude}; pace; echo $P"], capture_output=True, text=True
        ).stdout.strip()

    assert paced() == "0.100"  # alone: INTERVAL
    sleeper = subprocess.Popen(["sleep", "30"])
    (tmp_path / str(sleeper.pid)).touch()  # another live probe
    (tmp_path / "999999999").touch()  # one killed with SIGKILL: its file stayed
    try:
        assert paced() == "0.200"
        assert not (tmp_path / "999999999").exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert paced() == "0.100" and [p.name for p in tmp_path.iterdir()] == []  # its own file goes when it ends
