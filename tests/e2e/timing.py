"""Where the e2e time goes: every test's wall time, split by what chaoskit's own events say it spent (effect wait,
hold, revert and recovery wait, diagnosis) beside its setup and the rest of its body, and every file's wall time.

Each test runs with CHAOSKIT_EVENTS pointing at a file of its own, so every run and injection it starts (in its
process or a chaoskit it spawns) appends its typed events there. The figures travel as the report's user properties,
so a run split over xdist workers is summed on the controller. The table is printed at the end of the session and
written as JSON to `.e2e-times.json` (bench/e2e_time.py renders it for bench/results/).
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from chaoskit.events import TAP

KEY = "chaoskit-times"
BUDGET_S = 25 * 60  # the e2e part of .ci/run
# what chaoskit's events say a test waited for, in report order; the rest is the test's own setup and body
PHASES = ("effect wait", "hold", "revert and recovery wait", "diagnosis")


def phases(lines: list[str]) -> dict[str, float]:
    """Seconds per phase from a test's event lines (JSON, as events.JsonLines writes them)."""
    spent: dict[str, float] = defaultdict(float)
    reverting: dict[tuple[str, str, str], float] = {}
    for line in lines:
        try:
            e = json.loads(line)
        except ValueError:
            continue  # a line cut by a killed chaoskit
        kind, where = e.get("event"), (e.get("playbook", ""), e.get("step", ""), e.get("fault", ""))
        if kind == "EffectObserved":
            spent["effect wait"] += e.get("after_s") or 0.0
        elif kind == "Reverting":
            spent["hold"] += e.get("held_s") or 0.0
            reverting[where] = e.get("at") or 0.0
        elif kind == "Reverted" and where in reverting:
            spent["revert and recovery wait"] += (e.get("at") or 0.0) - reverting.pop(where)
        elif kind == "Recovered":
            spent["revert and recovery wait"] += e.get("after_s") or 0.0
        elif kind == "Diagnosed" and not e.get("named") and not e.get("error"):
            spent["diagnosis"] += e.get("seconds") or 0.0
    return dict(spent)


@dataclass
class Times:
    """One test as the controller saw it."""

    nodeid: str
    start: float = 0.0
    stop: float = 0.0
    setup_s: float = 0.0
    call_s: float = 0.0
    teardown_s: float = 0.0
    outcome: str = "passed"
    worker: str = ""
    radius: str = ""  # what it touched, in words (conftest's radius hold)
    waited_for_radius_s: float = 0.0  # before its setup, for tests that met it
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def file(self) -> str:
        return self.nodeid.split("::", 1)[0]

    @property
    def wall_s(self) -> float:
        return self.setup_s + self.call_s + self.teardown_s


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    tap = Path(os.environ.get("CHAOSKIT_E2E_EVENTS_DIR", "/tmp")) / f"e2e-events-{os.getpid()}-{time.time_ns()}.jsonl"
    before, start = os.environ.get(TAP), time.time()
    os.environ[TAP] = str(tap)
    item.user_properties.append((f"{KEY}-start", start))
    try:
        return (yield)
    finally:
        if before is None:
            os.environ.pop(TAP, None)
        else:
            os.environ[TAP] = before


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    report: pytest.TestReport = yield
    if call.when == "teardown":
        tap = Path(os.environ.get(TAP, ""))
        lines = tap.read_text(encoding="utf-8").splitlines() if tap.is_file() else []
        if tap.is_file():
            tap.unlink()
        report.user_properties.append((KEY, phases(lines)))
    report.user_properties.append((f"{KEY}-stop", time.time()))
    return report


def waiting_share(s: dict[str, Any]) -> float:
    """Of the tests' own time, the share spent in chaoskit's waits: each test's waits, capped at its wall time (runs
    side by side inside one test wait at once); the rest of a test (its own rollouts and polls) is not counted."""
    tests = s["slowest"]
    waited = sum(min(t["wall_s"], sum(t.get(p, 0.0) for p in PHASES)) for t in tests)
    return waited / (sum(t["wall_s"] for t in tests) or 1.0)


class Collector:
    """On the controller (or a run without xdist): every test's times from its reports."""

    def __init__(self) -> None:
        self.tests: dict[str, Times] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        t = self.tests.setdefault(report.nodeid, Times(report.nodeid))
        setattr(t, f"{report.when}_s", report.duration)
        t.worker = getattr(report, "node", None) and report.node.gateway.id or t.worker  # type: ignore[attr-defined]
        if report.outcome != "passed" and not (report.when != "call" and report.outcome == "skipped"):
            t.outcome = report.outcome
        for name, value in report.user_properties:
            if name == f"{KEY}-start" and not t.start:
                t.start = float(value)
            elif name == f"{KEY}-stop":
                t.stop = max(t.stop, float(value))
            elif name == KEY:
                t.phases = dict(value)
            elif name == "chaoskit-radius":
                t.radius = str(value)
            elif name == "chaoskit-waited-for-radius":
                t.waited_for_radius_s = float(value)

    def summary(self) -> dict[str, Any]:
        tests = sorted(self.tests.values(), key=lambda t: -t.wall_s)
        files: dict[str, list[Times]] = defaultdict(list)
        for t in tests:
            files[t.file].append(t)
        # from the first test's start to the last one's end: not the wait for another session's lock before them
        wall = max((t.stop for t in tests), default=0.0) - min((t.start for t in tests if t.start), default=0.0)
        waited = {p: sum(t.phases.get(p, 0.0) for t in tests) for p in PHASES}
        return {
            "wall_s": wall,
            "tests": len(tests),
            "sum_of_tests_s": sum(t.wall_s for t in tests),
            "waited_s": waited,
            "files": {
                f: {
                    "tests": len(ts),
                    "sum_s": sum(t.wall_s for t in ts),
                    "span_s": max(t.stop for t in ts) - min(t.start for t in ts) if all(t.start for t in ts) else 0.0,
                }
                for f, ts in sorted(files.items(), key=lambda kv: -sum(t.wall_s for t in kv[1]))
            },
            "slowest": [
                {
                    "test": t.nodeid,
                    "worker": t.worker,
                    "wall_s": t.wall_s,
                    "setup_s": t.setup_s,
                    "body_s": t.call_s + t.teardown_s,
                    "start": t.start,
                    "stop": t.stop,
                    "outcome": t.outcome,
                    "radius": t.radius,
                    "waited_for_radius_s": t.waited_for_radius_s,
                    **t.phases,
                }
                for t in tests
            ],
        }

    @pytest.hookimpl(trylast=True)  # after pytest's own slowest durations: the log's last lines before its verdict
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.tests:
            return
        s = self.summary()
        Path(os.environ.get("CHAOSKIT_E2E_TIMES", ".e2e-times.json")).write_text(json.dumps(s, indent=1))
        write = terminalreporter.write_line
        terminalreporter.section("where the e2e time went")
        write(f"{'file':44s} {'tests':>5s} {'sum':>8s} {'span':>8s}")
        for f, v in s["files"].items():
            write(f"{f.removeprefix('tests/e2e/'):44s} {v['tests']:5d} {v['sum_s']:7.0f}s {v['span_s']:7.0f}s")
        write("")
        head = "".join(f"{p[:13]:>14s}" for p in PHASES)
        write(f"{'ten slowest tests':60s} {'wall':>7s} {'setup':>7s}{head}")
        for t in s["slowest"][:10]:
            name = t["test"].removeprefix("tests/e2e/")
            cells = "".join(f"{t.get(p, 0.0):13.0f}s" for p in PHASES)
            write(f"{name[:60]:60s} {t['wall_s']:6.0f}s {t['setup_s']:6.0f}s{cells}")
        total = s["sum_of_tests_s"] or 1.0
        words = ", ".join(f"{p} {v:.0f}s" for p, v in s["waited_s"].items())
        write(f"chaoskit's own waits summed over every run (runs side by side count each): {words}")
        write(f"at least {waiting_share(s):.0%} of the tests' {total:.0f}s is waiting on one of them")
        write(f"the tests' sum {total:.0f}s ran in {s['wall_s']:.0f}s of wall time ({total / s['wall_s']:.2f} at once)")
        alone = sum(t["wall_s"] for t in s["slowest"] if "breaks the cluster" in t["radius"])
        waited = sum(t["waited_for_radius_s"] for t in s["slowest"])
        write(f"holding the whole cluster (alone): {alone:.0f}s; waiting for another test's radius: {waited:.0f}s")
        write(f"e2e budget: {s['wall_s'] / 60:.1f} min of {BUDGET_S / 60:.0f} min")


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller, or a run without workers
        config.pluginmanager.register(Collector(), "chaoskit-e2e-times")
