"""Where diagnosers read from: the kube API (bounded, and given up on once it stops answering) and node shells.

A diagnosis must still say something when the API server is the thing that broke, so every API read is bounded in
time and the first sign that nothing answers (a refused connection, a TLS failure, a timeout) marks the API down:
later reads fail at once with the same reason instead of each waiting out its own timeout. Node-side reads batch
their commands into one `sh` per node and component, because each `docker exec` costs more than the command.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from chaoskit.cluster.kube import Kube, KubeError
from chaoskit.errors import ChaoskitError
from chaoskit.faults.base import Env

T = TypeVar("T")
API_TIMEOUT = 8.0  # seconds for one API read; the API server's own default request timeout is 60 s
_ANSWERED = re.compile(r"HTTP [1-9]\d\d")  # an HTTP status: the API server is there, whatever it said


# the part of a urllib3/ssl error a reader needs, in the order they are tried
_REASONS = (
    re.compile(r"certificate verify failed: [^('\")]+"),
    re.compile(r"\[Errno -?\d+\] [^'\")]+"),
    re.compile(r"(?:Read|Connect) timed out"),
    re.compile(r"HTTP [1-9]\d\d[^:]*"),
)


def short_reason(message: str) -> str:
    """`GET /path: <reason>` from the adapter's error, without urllib3's retry and pool wrapping."""
    first = message.splitlines()[0] if message else ""
    head = " ".join(first.split(" ", 2)[:2]).rstrip(":")
    for pattern in _REASONS:
        if m := pattern.search(message):
            return f"{head}: {m.group(0).strip()}"
    return first[:200]


class ApiUnavailable(ChaoskitError):
    """The API server did not answer (or did not answer in time); the message says how."""


@dataclass(frozen=True)
class Fetched:
    """One API read: the object, or why there is none."""

    data: Any = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


class ApiAccess:
    """Bounded, cached reads through the Kube seam, with a breaker that opens on the first unanswered request."""

    def __init__(self, kube: Kube, timeout: float = API_TIMEOUT) -> None:
        self.kube, self.timeout = kube, timeout
        self.down: str = ""  # why the API is considered unreachable; "" while it answers
        self._cache: dict[tuple[str, tuple[tuple[str, str], ...]], Fetched] = {}
        self._lock = threading.Lock()

    def fetch(self, path: str, *, fresh: bool = False, **query: str) -> Fetched:
        """GET `path`; the answer is cached for the diagnosis unless `fresh` asks for a new read."""
        key = (path, tuple(sorted(query.items())))
        with self._lock:
            if key in self._cache and not fresh:
                return self._cache[key]
        try:
            got = Fetched(self._bounded(f"GET {path}", lambda: self.kube.get(path, **query)))
        except ApiUnavailable as exc:
            got = Fetched(error=str(exc))
        with self._lock:
            self._cache[key] = got
        return got

    def raw(self, path: str) -> Fetched:
        try:
            return Fetched(self._bounded(f"GET {path}", lambda: self.kube.raw(path)))
        except ApiUnavailable as exc:
            return Fetched(error=str(exc))

    def _bounded(self, what: str, call: Callable[[], T]) -> T:
        if self.down:
            raise ApiUnavailable(f"API server unreachable: {self.down}")
        box: list[tuple[bool, Any]] = []

        def run() -> None:
            try:
                box.append((True, call()))
            except BaseException as exc:  # handed to the caller's thread below
                box.append((False, exc))

        # a daemon thread: a read hung on a dead etcd must not keep chaoskit from exiting
        worker = threading.Thread(target=run, name="chaoskit-api-read", daemon=True)
        worker.start()
        worker.join(self.timeout)
        if not box:
            self._trip(f"{what}: no answer within {self.timeout:g}s")
            raise ApiUnavailable(f"API server unreachable: {self.down}")
        ok, value = box[0]
        if ok:
            return value  # type: ignore[no-any-return]
        if isinstance(value, KubeError):
            message = short_reason(str(value))
            if not _ANSWERED.search(message):
                self._trip(message)
            raise ApiUnavailable(message) from value
        raise value

    def _trip(self, reason: str) -> None:
        with self._lock:
            self.down = self.down or reason


@dataclass(frozen=True)
class Section:
    """What one command of a node script printed, and its exit code (None: it never ran)."""

    output: str
    rc: int | None

    @property
    def ok(self) -> bool:
        return self.rc == 0

    @property
    def text(self) -> str:
        return self.output.strip()


NOT_RUN = Section("", None)
_MARK = "@@chaoskit-section "
_RC = "@@chaoskit-rc "


def section_script(commands: Mapping[str, str]) -> str:
    """One sh script running each command in turn, its output framed so `parse_sections` can split it back."""
    # the newline before the exit code: output need not end with one (curl's bodies often do not)
    parts = [f"echo '{_MARK}{name}'; ( {cmd} ) 2>&1; printf '\\n{_RC}%s\\n' \"$?\"" for name, cmd in commands.items()]
    return "\n".join(parts)


def parse_sections(text: str) -> dict[str, Section]:
    sections: dict[str, Section] = {}
    name, lines = "", list[str]()
    for line in text.splitlines():
        if line.startswith(_MARK):
            name, lines = line[len(_MARK) :].strip(), []
        elif line.startswith(_RC) and name:
            rc = line[len(_RC) :].strip()
            if lines and not lines[-1]:
                lines.pop()  # the newline the script adds before the exit code
            sections[name] = Section("\n".join(lines), int(rc) if rc.lstrip("-").isdigit() else None)
            name = ""
        elif name:
            lines.append(line)
    if name:  # the script was cut off (its timeout) inside this command
        sections[name] = Section("\n".join(lines), None)
    return sections


@dataclass
class Sources:
    """The seams a diagnosis reads through, and the cluster's shape (node names are known without the API)."""

    env: Env
    control_plane: str
    nodes: tuple[str, ...]  # every node, the control plane included
    api: ApiAccess
    clock: Callable[[], float] = field(default=time.time)

    @classmethod
    def of(cls, env: Env, control_plane: str, nodes: tuple[str, ...], api_timeout: float = API_TIMEOUT) -> Sources:
        return cls(env, control_plane, nodes, ApiAccess(env.kube, api_timeout))

    def sections(self, node: str, commands: Mapping[str, str], timeout: float = 60) -> dict[str, Section]:
        """Run the commands on `node` in one shell; a command that did not run maps to NOT_RUN-like sections."""
        try:
            done = self.env.nodes.run(node, ["sh", "-c", section_script(commands)], check=False, timeout=timeout)
        except ChaoskitError as exc:
            return _not_run(node, commands, str(exc).splitlines()[0])
        found = parse_sections(done.stdout)
        if not found and done.returncode != 0:  # the shell never started: the node container is gone or stopped
            return _not_run(node, commands, done.output.strip()[-200:] or f"exit {done.returncode}")
        return {name: found.get(name, NOT_RUN) for name in commands}


def _not_run(node: str, commands: Mapping[str, str], reason: str) -> dict[str, Section]:
    return {name: Section(f"could not run on {node}: {reason}", None) for name in commands}
