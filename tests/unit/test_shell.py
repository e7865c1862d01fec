"""Long-running host processes: spawn writes their output to a log, end stops them even when TERM is ignored."""

from __future__ import annotations

import time
from pathlib import Path

from chaoskit.seams.shell import end, spawn


def test_a_spawned_process_appends_its_output_to_the_log(tmp_path: Path) -> None:
    log = tmp_path / "p.log"
    log.write_text("before\n")
    proc = spawn(["sh", "-c", "echo out; echo err >&2"], log, cwd=tmp_path)
    assert proc.wait(timeout=10) == 0
    assert log.read_text().splitlines() == ["before", "out", "err"]


def test_end_kills_a_process_that_ignores_term(tmp_path: Path) -> None:
    proc = spawn(["sh", "-c", "trap '' TERM; echo up; while :; do sleep 0.05; done"], tmp_path / "p.log")
    while "up" not in (tmp_path / "p.log").read_text():  # the trap is set once it says so
        assert proc.poll() is None
        time.sleep(0.01)
    end(proc, timeout=0.2)
    assert proc.returncode is not None
