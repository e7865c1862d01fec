"""Running host commands: the one place chaoskit starts processes on the host (with nodeexec.py's streams).

Every failure becomes a CommandError with a command the user can paste and the
tail of what it printed. FakeRunner stands in for it in unit tests. `spawn` starts
the long-running ones (daemons, Prometheus) with their output in a log file.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from chaoskit.errors import CommandError


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str = ""

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class Asks(str):
    """A shell line that also says what it asks, for a reader that cannot run it: the URL it GETs (`url`), printed as
    body then status line (`http`) or as the metric families matching `families` (a regular expression), or how long
    after its chain began it ends (`wait_s`). A managed control plane's node script is answered from these through the
    API (diagnosers.kit.managed); a line composed from one is a plain str again, and is not answered there."""

    url: str
    http: bool
    families: str
    wait_s: float | None

    def __new__(
        cls, line: str, *, url: str = "", http: bool = False, families: str = "", wait_s: float | None = None
    ) -> Asks:
        self = super().__new__(cls, line)
        self.url, self.http, self.families, self.wait_s = url, http, families, wait_s
        return self


class Runner(Protocol):
    def run(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float | None = None,
        check: bool = True,
        log: Path | None = None,
    ) -> Completed: ...


class SubprocessRunner:
    """Runs commands for real. With `log`, output streams to that file (long builds) instead of memory."""

    def run(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float | None = None,
        check: bool = True,
        log: Path | None = None,
    ) -> Completed:
        full_env = {**os.environ, **env} if env else None
        argv = [str(a) for a in argv]
        try:
            if log is not None:
                log.parent.mkdir(parents=True, exist_ok=True)
                with log.open("wb") as sink:
                    proc = subprocess.run(
                        argv,
                        input=input,
                        env=full_env,
                        cwd=cwd,
                        timeout=timeout,
                        stdout=sink,
                        stderr=subprocess.STDOUT,
                    )
                done = Completed(tuple(argv), proc.returncode, log.read_text(errors="replace"))
            else:
                proc = subprocess.run(
                    argv,
                    input=input,
                    env=full_env,
                    cwd=cwd,
                    timeout=timeout,
                    capture_output=True,
                )
                done = Completed(
                    tuple(argv),
                    proc.returncode,
                    proc.stdout.decode(errors="replace"),
                    proc.stderr.decode(errors="replace"),
                )
        except FileNotFoundError as exc:
            raise CommandError(argv, 127, str(exc), note="program not found") from exc
        except subprocess.TimeoutExpired as exc:
            out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
            raise CommandError(argv, -1, out, note=f"timed out after {timeout}s") from exc
        if check and done.returncode != 0:
            raise CommandError(argv, done.returncode, done.output)
        return done


Process = subprocess.Popen[bytes]  # a long-running host process `spawn` started


def spawn(argv: Sequence[str], log: Path, *, cwd: Path | None = None, detach: bool = False) -> Process:
    """Start a long-running host process, its stdout and stderr appended to `log`; `detach` lets it outlive us."""
    with log.open("ab") as sink:
        return subprocess.Popen(
            [str(a) for a in argv],
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            start_new_session=detach,
        )


def end(proc: subprocess.Popen[Any], timeout: float = 5.0) -> None:
    """SIGTERM, then SIGKILL when it has not exited within `timeout` seconds; reaped either way."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


Responder = Callable[[tuple[str, ...]], Completed | None]


@dataclass
class FakeRunner:
    """Records every command; answers from `responses` (argv prefix -> stdout) or `responder`."""

    responses: dict[tuple[str, ...], str] = field(default_factory=dict)
    failures: dict[tuple[str, ...], str] = field(default_factory=dict)
    responder: Responder | None = None
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def run(
        self,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float | None = None,
        check: bool = True,
        log: Path | None = None,
    ) -> Completed:
        key = tuple(str(a) for a in argv)
        self.calls.append(key)
        if self.responder is not None and (answer := self.responder(key)) is not None:
            done = answer
        else:
            done = Completed(key, 0, "")
            for prefix, out in self.failures.items():
                if key[: len(prefix)] == prefix:
                    done = Completed(key, 1, out)
            for prefix, out in self.responses.items():
                if key[: len(prefix)] == prefix:
                    done = Completed(key, 0, out)
        if check and done.returncode != 0:
            raise CommandError(key, done.returncode, done.output)
        return done
