"""The shipped catalog run once per e2e session (`chaoskit run playbooks/`), with observers watching the cluster
while each fault holds.

A test module that needs more than the run record about a fault (a lease renewing, /healthz, a work queue, while
the fault holds) registers an observer for it with `@observe(fault)`. The catalog fixture starts each observer in
a thread when chaoskit's progress says the fault's effect was observed, and sets its `reverted` event when
chaoskit says it is reverting it; what the observer returns is kept by (playbook, step) in `Catalog.seen`. So each
fault is injected once per session, and the tests of its details read what was observed then.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaoskit.env import Env


@dataclass(frozen=True)
class Holding:
    """One fault step while it holds, as an observer sees it."""

    env: Env
    playbook: str
    step: str
    namespace: str  # the playbook's workload namespace
    reverted: threading.Event  # set when chaoskit says it is reverting the fault: the hold is over


Observer = Callable[[Holding], dict[str, Any]]
OBSERVERS: dict[str, list[Observer]] = {}
# the runner's progress: "  12.3s <playbook>: [<step>] effect observed after 0.2s" / "... [<step>] reverting ..." /
# "... [<step>] reverted ..."
PROGRESS = re.compile(
    r"^\s*[\d.]+s (?P<playbook>[\w.-]+): \[(?P<step>[^\]]+)\] (?P<what>effect observed|reverting|reverted) "
)


def observe(fault: str) -> Callable[[Observer], Observer]:
    """Register an observer that runs while `fault` holds in the session's catalog run."""

    def register(fn: Observer) -> Observer:
        OBSERVERS.setdefault(fault, []).append(fn)
        return fn

    return register


@dataclass
class Catalog:
    record: dict[str, Any]
    junit: Path
    html: Path
    returncode: int
    stderr: str
    seen: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # wall time of each step's "effect observed" and "reverted" lines, as they arrived
    moments: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)

    def steps(self, fault: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        return [(run, s) for run in self.record["runs"] for s in run["steps"] if s["fault"] == fault]


def _fault_of(step: str) -> str:
    return step.split("-", 1)[1]  # step names are "<n>-<fault>"


def run_catalog(env: Env, out: Path, timeout: float = 2400) -> Catalog:
    junit, html = out / "junit.xml", out / "report.html"
    argv = [sys.executable, "-m", "chaoskit", "run", "playbooks/", "-o", "json", "--junit", str(junit),
            "--html", str(html)]  # fmt: skip
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    moments: dict[tuple[str, str], dict[str, float]] = {}
    holding: dict[tuple[str, str], threading.Event] = {}
    threads: list[threading.Thread] = []

    def watch(fn: Observer, h: Holding) -> None:
        try:
            seen.setdefault((h.playbook, h.step), {}).update(fn(h))
        except Exception as exc:  # an observer's own failure is kept for the test to report
            seen.setdefault((h.playbook, h.step), {})["observer_error"] = f"{fn.__name__}: {exc!r}"

    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(timeout, proc.kill)  # reading its progress blocks: a hung run must still end
    watchdog.start()
    stdout: list[str] = []
    reader = threading.Thread(target=lambda: stdout.append(proc.stdout.read() if proc.stdout else ""), daemon=True)
    reader.start()
    lines: list[str] = []
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append(line)
        m = PROGRESS.match(line)
        if m is None:
            continue
        key = (m["playbook"], m["step"])
        moments.setdefault(key, {})["effect" if m["what"] == "effect observed" else m["what"]] = time.time()
        if m["what"] in ("reverting", "reverted"):
            holding.pop(key, threading.Event()).set()
            continue
        holding[key] = reverted = threading.Event()
        for fn in OBSERVERS.get(_fault_of(m["step"]), []):
            h = Holding(env, m["playbook"], m["step"], f"chaoskit-{m['playbook']}", reverted)
            threads.append(threading.Thread(target=watch, args=(fn, h), daemon=True))
            threads[-1].start()
    proc.wait()
    watchdog.cancel()
    reader.join()
    for t in threads:
        t.join(timeout=60)
    record = json.loads(stdout[0]) if stdout and stdout[0].strip() else {}
    (out / "record.json").write_text(stdout[0] if stdout else "")  # kept for a look after the session
    (out / "progress.log").write_text("".join(lines))
    return Catalog(record, junit, html, proc.returncode, "".join(lines), seen, moments)
