"""Where diagnosers read from: the kube API (bounded, and given up on once it stops answering) and node shells.

A diagnosis must still say something when the API server is the thing that broke, so every API read is bounded in
time and the first sign that nothing answers (a refused connection, a TLS failure, a timeout) marks the API down:
later reads fail at once with the same reason instead of each waiting out its own timeout. Node-side reads batch
their commands into one `sh` per node and component, because each `docker exec` costs more than the command, and
run them side by side inside it, so a command that hangs on a frozen process costs its own timeout only.
"""

from __future__ import annotations

import re
import shlex
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from chaoskit import figures
from chaoskit.diagnosers.kit.batch import NodeBatches
from chaoskit.diagnosers.kit.budget import UNLIMITED, Budget, Outcome, leashed
from chaoskit.env import Env
from chaoskit.errors import ChaoskitError
from chaoskit.seams.kube import Kube, KubeError
from chaoskit.seams.nodeexec import named
from chaoskit.seams.shell import Asks

T = TypeVar("T")
Elsewhere = Callable[[Kube, Mapping[str, str], Sequence[Sequence[str]]], dict[str, "Section"]]
API_TIMEOUT = 4.0  # seconds for one API read: a kind API server answers in milliseconds; its own limit is 60 s
CONNECT_TIMEOUT = 3.0  # seconds to connect (a frozen API server still accepts: its kernel completes the handshake)
CURL_TIMED_OUT = 28  # curl's exit code when its --max-time ran out
ALONE_S = 12.0  # seconds for a timed-out probe asked again alone: its own --max-time and the docker exec around it


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
    """Bounded, cached reads through the Kube seam, with a breaker that opens on the first unanswered request.

    `probe` asks the API server once in the background; reads wait for that answer first, so a server that does not
    answer costs one timeout in all, while the node-side evidence is being collected, instead of one per read.
    """

    def __init__(self, kube: Kube, timeout: float = API_TIMEOUT, budget: Budget = UNLIMITED) -> None:
        self.kube = kube.bounded((min(CONNECT_TIMEOUT, timeout), timeout))
        self.timeout, self.budget = timeout, budget
        self._down = ""  # why the API is considered unreachable; "" while it answers
        self._cache: dict[tuple[str, tuple[tuple[str, str], ...]], Fetched] = {}
        self._asking: dict[tuple[str, tuple[tuple[str, str], ...]], threading.Event] = {}  # reads in flight
        self._lock = threading.Lock()
        self._probed = threading.Event()
        self._probed.set()  # no probe in flight

    @property
    def down(self) -> str:
        """Why the API is considered unreachable ("" while it answers), once the probe in flight has its answer."""
        self._probed.wait(self.timeout + 1)
        return self._down

    def probe(self, path: str = "/readyz", then: Callable[[Fetched, str], None] = lambda *_: None) -> None:
        """Read `path` in the background; `then` gets the answer and why the API is down ("" if it is not), in the
        probe's thread and before any read goes on."""
        self._probed.clear()

        def run() -> None:
            try:
                then(self.raw(path), self._down)
            finally:
                self._probed.set()

        threading.Thread(target=run, name="chaoskit-api-probe", daemon=True).start()

    def prefetch(self, path: str) -> None:
        """Read `path` in the background now: a read that needs etcd, asked at once, finds a hung etcd (and trips the
        breaker) while the node scripts run, not after them; whoever reads it later shares this answer."""
        self._in_background(path, {}, after_probe=False)

    def soon(self, path: str, **query: str) -> Callable[[], Fetched]:
        """Start reading `path` in the background and return how to get its answer: a diagnoser asks its API reads
        before its node script, so the reads are not waited for one by one after the script."""
        self._in_background(path, query, after_probe=True)
        return lambda: self._fetch(path, query, False, True)  # the cached answer, or the one in flight

    def _in_background(self, path: str, query: dict[str, str], *, after_probe: bool) -> None:
        args = (path, query, False, after_probe)
        threading.Thread(target=self._fetch, args=args, name="chaoskit-api-read-ahead", daemon=True).start()

    def fetch(self, path: str, *, fresh: bool = False, **query: str) -> Fetched:
        """GET `path`; the answer is cached for the diagnosis unless `fresh` asks for a new read."""
        return self._fetch(path, query, fresh, True)

    def _fetch(self, path: str, query: dict[str, str], fresh: bool, after_probe: bool) -> Fetched:
        key = (path, tuple(sorted(query.items())))
        with self._lock:
            if key in self._cache and not fresh:
                return self._cache[key]
            asked = self._asking.get(key)
            if asked is None or fresh:  # nobody is reading it now: this call does
                asked = self._asking[key] = threading.Event()
                mine = True
            else:  # another diagnoser asks the same right now: wait for its answer, not read it twice
                mine = False
        if not mine:
            asked.wait(self.budget.cap(self.timeout + 1) + 1)
            with self._lock:
                if key in self._cache:
                    return self._cache[key]
            return Fetched(error=f"GET {path}: no answer before the diagnosis's time budget ran out")
        if after_probe:  # a prefetch is a probe of its own
            self._probed.wait(self.budget.cap(self.timeout + 1))  # the probe is itself bounded by the timeout
        try:
            got = Fetched(self._bounded(f"GET {path}", lambda: self.kube.get(path, **query)))
        except ApiUnavailable as exc:
            got = Fetched(error=str(exc))
        except BaseException:
            asked.set()  # the waiters find no answer and say so
            raise
        with self._lock:
            self._cache[key] = got
            self._asking.pop(key, None)
        asked.set()
        return got

    def raw(self, path: str) -> Fetched:
        try:
            return Fetched(self._bounded(f"GET {path}", lambda: self.kube.raw(path)))
        except ApiUnavailable as exc:
            return Fetched(error=str(exc))

    def _bounded(self, what: str, call: Callable[[], T]) -> T:
        if self._down:
            raise ApiUnavailable(f"API server unreachable: {self._down}")
        wait = self.budget.cap(self.timeout)
        if wait <= 0:
            raise ApiUnavailable(f"{what}: not asked, the diagnosis's time budget is spent")
        outcome = self._unless_tripped(call, wait)
        if not outcome.finished and self._down:  # another read found the API server gone meanwhile
            raise ApiUnavailable(f"API server unreachable: {self._down}")
        if not outcome.finished:
            if wait < self.timeout:  # cut short by the budget: no verdict on the API server
                raise ApiUnavailable(f"{what}: no answer before the diagnosis's time budget ran out")
            self._trip(f"{what}: no answer within {figures.seconds(self.timeout)}")
            raise ApiUnavailable(f"API server unreachable: {self._down}")
        if outcome.error is None:
            return outcome.value  # type: ignore[return-value]
        if isinstance(outcome.error, KubeError):
            message = short_reason(str(outcome.error))
            if outcome.error.status is None:  # no answer at all: the API server is not there
                self._trip(message)
            raise ApiUnavailable(message) from outcome.error
        raise outcome.error

    def _unless_tripped(self, call: Callable[[], T], wait: float) -> Outcome[T]:
        """The call's outcome within `wait` seconds, or unfinished as soon as the breaker opens: a read in flight
        when another finds the API server gone stops waiting too."""
        (outcome,) = leashed([call], wait, name="chaoskit-api-read", stop=lambda: bool(self._down))
        return outcome

    def _trip(self, reason: str) -> None:
        with self._lock:
            self._down = self._down or reason


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
_END = "@@chaoskit-end"
SCRIPT_MARGIN = 1.5  # seconds a node script needs beyond its commands' limit: docker exec, the kill, the report


def section_script(commands: Mapping[str, str], chains: Sequence[Sequence[str]] = (), limit: float = 60) -> str:
    """One sh script running the commands side by side, their output framed so `parse_sections` can split it back.

    Commands named in a chain run one after the other (a window between two scrapes), each only if the one before
    succeeded; every other command, and each chain as a whole, runs at once with the rest, so a command that hangs
    costs its own timeout and not everyone's. Whatever still runs after `limit` seconds is killed and said to be cut
    off, and what the others printed still comes back.

    The framing costs no process per command beyond the command's own subshell (the shell's builtins write the
    markers, one awk joins the files): on a 2-core node, 50 commands framed with `cat` cost 0.3 CPU-seconds.
    """
    index = {name: i for i, name in enumerate(commands)}
    chained = {name for chain in chains for name in chain}
    jobs = [list(chain) for chain in chains if chain] + [[name] for name in commands if name not in chained]
    lines = ["d=$(mktemp -d) || exit 1"]
    lines += [f'echo {shlex.quote(_MARK + name)} >"$d/{i}"' for name, i in index.items()]
    for job in jobs:
        # what `window_wait` counts from, only where a chain needs it (a `date` per job is a process per job)
        steps = ["chain_start=$(date +%s.%N)"] if any("chain_start" in commands[n] for n in job) else []
        for k, name in enumerate(job):
            i = index[name]
            steps.append(f'( {commands[name]} ) >>"$d/{i}" 2>&1; r=$?; printf \'\\n{_RC}%s\\n\' "$r" >>"$d/{i}"')
            if later := job[k + 1 :]:
                skip = " ".join(
                    f"printf '%s\\n\\n{_RC}-\\n' 'skipped: {name} failed' >>\"$d/{index[n]}\";" for n in later
                )
                steps.append(f'[ "$r" -eq 0 ] || {{ {skip} exit 0; }}')
        # timeout kills the job's whole group; the job as one quoted argument, so commands keep their own quoting
        lines.append(f'd="$d" timeout -k 1 {limit:g} sh -c {shlex.quote(chr(10).join(steps))} &')
    lines.append("wait")
    # a file with no exit code last: its job was killed before that command ended
    cut = f"chaoskit: cut off after {figures.seconds(limit)}"
    join = (
        "FNR == 1 && NR > 1 && !ended { print cut; print rc } { print; ended = index($0, rc) == 1 }"
        " END { if (NR && !ended) { print cut; print rc } }"
    )
    files = " ".join(f'"$d/{i}"' for i in index.values())
    lines.append(f"awk -v cut={shlex.quote(cut)} -v rc={shlex.quote(_RC)} {shlex.quote(join)} {files}")
    lines.append('rm -rf "$d"')
    return "\n".join(lines)


def window_wait(seconds: float) -> Asks:
    """A chain step that sleeps until `seconds` after its chain began: a window between two scrapes then runs from
    the start of one to the start of the next, and a slow first scrape does not lengthen it."""
    left = (
        f'awk -v a="$chain_start" -v b="$(date +%s.%N)" \'BEGIN {{ d = a + {seconds:g} - b; print (d > 0 ? d : 0) }}\''
    )
    return Asks(f'sleep "$({left})"', wait_s=seconds)


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
    budget: Budget = UNLIMITED  # every node script and API read ends by its deadline
    batches: NodeBatches[Section] | None = None  # one round-trip per node for the scripts asked at once
    out_of_reach: frozenset[str] = frozenset()  # nodes with no way in (a managed control plane)
    elsewhere: Elsewhere | None = None  # how their node scripts are answered instead (diagnosers.kit.managed)

    def batched(self) -> Sources:
        """These sources with the node scripts asked at about the same moment joined, per node."""
        self.batches = NodeBatches(self._script, NOT_RUN)
        return self

    @classmethod
    def of(
        cls,
        env: Env,
        control_plane: str,
        nodes: tuple[str, ...],
        api_timeout: float = API_TIMEOUT,
        budget: Budget = UNLIMITED,
    ) -> Sources:
        return cls(env, control_plane, nodes, ApiAccess(env.kube, api_timeout, budget), budget=budget)

    def sections(
        self, node: str, commands: Mapping[str, str], timeout: float = 60, chains: Sequence[Sequence[str]] = ()
    ) -> dict[str, Section]:
        """Run the commands on `node` in one shell (side by side; see `section_script` for chains), within `timeout`
        and the budget; a command that did not run maps to a section with no exit code that says why. Scripts asked
        for the same node at about the same moment share one round-trip (`NodeBatches`)."""
        if self.batches is None:
            return self._script(node, commands, timeout, chains)
        return self.batches.sections(node, commands, timeout, chains)

    def _script(
        self, node: str, commands: Mapping[str, str], timeout: float, chains: Sequence[Sequence[str]]
    ) -> dict[str, Section]:
        if node in self.out_of_reach and self.elsewhere is not None:  # what the API server shows of itself
            return self.elsewhere(self.api.kube, commands, chains)
        return self._timeouts_asked_alone(node, commands, self._run(node, commands, timeout, chains), chains)

    def _run(
        self, node: str, commands: Mapping[str, str], timeout: float, chains: Sequence[Sequence[str]]
    ) -> dict[str, Section]:
        timeout = self.budget.cap(timeout)
        if timeout < SCRIPT_MARGIN + 0.5:  # less than half a second for the commands would only cut them off
            return _not_run(node, commands, "the diagnosis's time budget is spent")
        script = section_script(commands, chains, limit=round(timeout - SCRIPT_MARGIN, 1))
        try:
            # a diagnosis's subjects are names (a managed control plane is no node): one becomes a node only here
            done = self.env.nodes.run(named(node), ["sh", "-c", script], check=False, timeout=timeout)
        except ChaoskitError as exc:
            return _not_run(node, commands, str(exc).splitlines()[0])
        found = parse_sections(done.stdout)
        if not found and done.returncode != 0:  # the shell never started: the node container is gone or stopped
            return _not_run(node, commands, done.output.strip()[-200:] or f"exit {done.returncode}")
        return {name: found.get(name, NOT_RUN) for name in commands}

    def _timeouts_asked_alone(
        self, node: str, commands: Mapping[str, str], found: dict[str, Section], chains: Sequence[Sequence[str]]
    ) -> dict[str, Section]:
        """A probe that timed out among the look's many commands is asked once more on its own before it counts: on
        a loaded 2-core node the look's own crowd of processes can hold a healthy endpoint past curl's --max-time,
        and a look must not report its own weight as a hang. A component that really hangs times out again. A step
        of a chain (a window between two scrapes) is not asked again: its timing is the measurement."""
        chained = {name for chain in chains for name in chain}
        again = {n: commands[n] for n, s in found.items() if s.rc == CURL_TIMED_OUT and n not in chained}
        if not again or self.budget.cap(ALONE_S) < SCRIPT_MARGIN + 0.5:
            return found
        retried = self._run(node, again, ALONE_S, ())
        return {**found, **{n: s for n, s in retried.items() if s.rc is not None}}  # an ask cut off keeps the first

    def side_by_side(self, *scripts: tuple[str, Mapping[str, str]]) -> list[dict[str, Section]]:
        """Several nodes' scripts (node, commands) at once: the look costs the slowest, not their sum (a node cut off
        from the control plane makes the control plane's questions about it wait out their timeouts)."""
        jobs = [partial(self.sections, node, commands) for node, commands in scripts]
        outcomes = leashed(jobs, self.budget.cap(60) + 1, name="chaoskit-sections")
        return [
            o.value if o.value is not None else _not_run(node, commands, f"{o.error or 'not finished in time'}")
            for (node, commands), o in zip(scripts, outcomes, strict=True)
        ]


def _not_run(node: str, commands: Mapping[str, str], reason: str) -> dict[str, Section]:
    return {name: Section(f"could not run on {node}: {reason}", None) for name in commands}
