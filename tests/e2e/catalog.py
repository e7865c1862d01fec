"""The shipped catalog run once per e2e session (`chaoskit run playbooks/`), with observers watching the cluster
while each fault holds.

A test module that needs more than the run record about a fault (a lease renewing, /healthz, a work queue, while
the fault holds) registers an observer for it with `@observe(fault)`. The catalog fixture starts each observer in
a thread when chaoskit's events say the fault's effect was observed, and sets its `reverted` event when
chaoskit says it is reverting it; what the observer returns is kept by (playbook, step) in `Catalog.seen`. So each
fault is injected once per session, and the tests of its details read what was observed then.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
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
# The run's typed events the catalog follows, and the moment each marks in `Catalog.moments`.
FOLLOWED = {"EffectObserved": "effect", "Reverting": "reverting", "Reverted": "reverted"}


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

    def save(self, path: Path) -> None:
        """For the session's other workers: the catalog runs once per session, whichever worker asks first."""
        data = {
            "record": self.record,
            "junit": str(self.junit),
            "html": str(self.html),
            "returncode": self.returncode,
            "stderr": self.stderr,
            "seen": [[*k, v] for k, v in self.seen.items()],
            "moments": [[*k, v] for k, v in self.moments.items()],
        }
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, default=str))
        tmp.rename(path)  # whole or absent: a worker reading it never sees half

    @classmethod
    def load(cls, path: Path) -> Catalog:
        d = json.loads(path.read_text())
        return cls(
            d["record"],
            Path(d["junit"]),
            Path(d["html"]),
            d["returncode"],
            d["stderr"],
            {(p, s): _tuples(v) for p, s, v in d["seen"]},
            {(p, s): v for p, s, v in d["moments"]},
        )


def _tuples(value: Any) -> Any:
    """What an observer returned, as it returned it: JSON made its tuples lists."""
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _fault_of(step: str) -> str:
    return step.split("-", 1)[1]  # step names are "<n>-<fault>"


def run_catalog(env: Env, out: Path, timeout: float = 2400) -> Catalog:
    junit, html = out / "junit.xml", out / "report.html"
    events_r, events_w = os.pipe()  # chaoskit writes its typed events here, a JSON line each, as they happen
    argv = [
        sys.executable,
        "-m",
        "chaoskit",
        "run",
        "playbooks/",
        "-o",
        "json",
        "--junit",
        str(junit),
        "--html",
        str(html),
        "--events",
        f"/dev/fd/{events_w}",
    ]
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    moments: dict[tuple[str, str], dict[str, float]] = {}
    holding: dict[tuple[str, str], threading.Event] = {}
    threads: list[threading.Thread] = []

    def watch(fn: Observer, h: Holding) -> None:
        try:
            seen.setdefault((h.playbook, h.step), {}).update(fn(h))
        except Exception as exc:  # an observer's own failure is kept for the test to report
            seen.setdefault((h.playbook, h.step), {})["observer_error"] = f"{fn.__name__}: {exc!r}"

    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, pass_fds=(events_w,))
    os.close(events_w)  # the pipe ends when chaoskit does
    watchdog = threading.Timer(timeout, proc.kill)  # reading its events blocks: a hung run must still end
    watchdog.start()
    stdout: list[str] = []
    stderr: list[str] = []
    readers = [
        threading.Thread(target=lambda: stdout.append(proc.stdout.read() if proc.stdout else ""), daemon=True),
        threading.Thread(target=lambda: stderr.append(proc.stderr.read() if proc.stderr else ""), daemon=True),
    ]
    for r in readers:
        r.start()
    events: list[str] = []
    with os.fdopen(events_r, encoding="utf-8") as stream:
        for line in stream:
            events.append(line)
            event = json.loads(line)
            if event["event"] not in FOLLOWED or not event["step"]:
                continue
            key, what = (event["playbook"], event["step"]), FOLLOWED[event["event"]]
            moments.setdefault(key, {})[what] = event["at"]
            if what in ("reverting", "reverted"):
                holding.pop(key, threading.Event()).set()
                continue
            holding[key] = reverted = threading.Event()
            for fn in OBSERVERS.get(_fault_of(event["step"]), []):
                h = Holding(env, event["playbook"], event["step"], f"chaoskit-{event['playbook']}", reverted)
                threads.append(threading.Thread(target=watch, args=(fn, h), daemon=True))
                threads[-1].start()
    proc.wait()
    watchdog.cancel()
    for r in readers:
        r.join()
    for t in threads:
        t.join(timeout=60)
    record = json.loads(stdout[0]) if stdout and stdout[0].strip() else {}
    (out / "record.json").write_text(stdout[0] if stdout else "")  # kept for a look after the session
    progress = stderr[0] if stderr else ""
    (out / "progress.log").write_text(progress)
    (out / "events.jsonl").write_text("".join(events))
    return Catalog(record, junit, html, proc.returncode, progress, seen, moments)
