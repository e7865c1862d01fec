"""The in-node probe both measurements read the dataplane with: one shell per node, started once.

Polling with one `docker exec` per look would cost a process start on the host every 100 ms per node; loops
inside the node read the rules (iptables-save or nft, whichever mode kube-proxy runs, as
chaoskit.components.kube_proxy reads them) and ask the Service, then print only what changed, stamped with the
node's clock (the host's: a kind node shares its kernel). The rules and the requests run in two loops, so a request
hanging on a gone endpoint (cut off at 1 s) does not delay the next rules read. The loops are bash and start no
process per request, so the probe barely loads the node whose behaviour it measures.

Each loop pauses INTERVAL between rounds, but a round also takes its own time (the rules read tens of ms, a request
round up to 1 s), so the loops report what bounds each observation: a rules line carries the start of the
previous read (which saw the old rules) and the end of its own, and every request round reports its start. A stage
end seen by the probe is as precise as the spacing of the two rounds that bracket it, never the nominal INTERVAL.
"""

from __future__ import annotations

import bisect
import shlex
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from chaoskit.components.kube_proxy import endpoint_ips_command
from chaoskit.seams.nodeexec import Node, NodeExec, Stream

INTERVAL = 0.1  # the pause between two rounds of each loop (a round itself takes longer: see `precision`)
# Where each probe on a node leaves a file named by its shell's pid: every loop pauses INTERVAL times the number of
# live probes there, so overlapping measurements (a suite's playbooks side by side) cost the node what one costs.
# A rules round is ~10 short processes, ~0.2 of a core per node at INTERVAL: three at once took a 2-core host's
# whole CPU and starved etcd. Each round's bracket is measured, so a slower pace shows in the reported precision.
PACE_DIR = "/run/chaoskit-probes"
REQUESTS_PER_ROUND = 4  # parallel requests each round: a new endpoint among k is hit with probability 4/k
FINEST = 0.001  # our clocks' resolution: no bracket is reported finer than this


@dataclass(frozen=True)
class RulesSeen:
    """The node's rules differ from the previous read's: they changed between `since` and `until`."""

    node: str
    at: float  # this read started
    ips: frozenset[str]  # endpoint IPs of the Service present in the node's rules
    since: float | None  # the previous read started (it saw the old rules); None on the probe's first read
    until: float  # this read ended

    @property
    def precision(self) -> float:
        """How long the change may have happened over: from the read that saw the old rules to the end of this one
        (the probe's first read has no old rules: only its own duration)."""
        return max(FINEST, self.until - (self.at if self.since is None else self.since))


@dataclass(frozen=True)
class AnswerSeen:
    node: str
    at: float
    pod: str  # the pod that answered a request through the Service (the workload answers with its hostname)


@dataclass(frozen=True)
class RoundSeen:
    """A request round started: the rounds are what brackets an answer."""

    node: str
    at: float


Seen = RulesSeen | AnswerSeen | RoundSeen
FAILED = ""  # AnswerSeen.pod of a request that got no answer (refused or timed out): `at` is when it was sent


@dataclass
class Rounds:
    """One node's request rounds, by start: the round an answer belongs to and the one before it."""

    starts: list[float] = field(default_factory=list)

    def add(self, at: float) -> None:
        bisect.insort(self.starts, at)

    def index(self, at: float) -> int:
        """The round `at` fell in (sent or answered): the last one started at or before it; -1 before the first."""
        return bisect.bisect_right(self.starts, at) - 1

    def next_start(self, at: float) -> float | None:
        """When the round after the one `at` fell in started."""
        i = self.index(at) + 1
        return self.starts[i] if i < len(self.starts) else None

    def precision(self, at: float, floor: float, last_old: float | None = None) -> float:
        """How precise a stage end seen at `at` is: from the start of the round that last saw the old state (the
        one `last_old` fell in, else the round before `at`'s) to `at`; with no such round, from `floor` (the stage's
        start: nothing was looked at in between)."""
        i = self.index(at) - 1 if last_old is None else self.index(last_old)
        return max(FINEST, at - (self.starts[i] if i >= 0 else floor))


def probe_script(
    namespace: str,
    service: str,
    cluster_ip: str,
    port: int,
    failures: bool = False,
    requests: bool = True,
    *,
    port_name: str = "http",
    pace_dir: str = PACE_DIR,
) -> str:
    """The loops run inside a node: `R <read start> <read end> <previous read start or -> <ip>...` when the rules
    change, and with `requests` `Q <t>` when a request round starts, `A <t> <pod>` per answer, and with `failures`
    `F <t sent>` per request that got no answer. Without `requests` only the rules are read (a Service whose answers
    do not name their pod tells nothing by them). `port_name` is the Service port's name, whose chain is read."""
    endpoint_ips = endpoint_ips_command(namespace, service, port_name)
    # bash for what runs every round: $EPOCHREALTIME stamps, `read -t` on a pipe nobody writes (fd 9) sleeps, and
    # /dev/tcp asks the Service, so a round starts no process (a curl took ~13 ms of CPU and a date ~2 ms: with a
    # measurement on, curl was the busiest process on a 2-core host)
    ms = round(INTERVAL * 1000)
    prelude = (
        "LC_ALL=C; exec 9<> <(:); nap() { read -t $1 -u 9; };"
        # this probe is one of the node's live probes until its shell ends (pkill's TERM included)
        f' d={shlex.quote(pace_dir)}; mkdir -p "$d" 2>/dev/null; : >"$d/$$" 2>/dev/null;'
        " trap 'rm -f \"$d/$$\"' EXIT; trap exit TERM INT;"
        # P: INTERVAL times the live probes (a killed one's file is dropped), with builtins only: no process a round
        ' pace() { local n=0 f; for f in "$d"/*; do if [ -d "/proc/${f##*/}" ]; then n=$((n+1));'
        ' elif [ -e "$f" ]; then rm -f "$f"; fi; done;'
        f" n=$((n>1?n:1)); printf -v P '%d.%03d' $((n*{ms}/1000)) $((n*{ms}%1000)); }}"
    )
    rules = (
        "last=x; p=-; while :; do t=$EPOCHREALTIME;"
        f" ips=$({endpoint_ips} | sort -u); ips=${{ips//$'\\n'/ }}; u=$EPOCHREALTIME;"
        f' if [ "$ips" != "$last" ]; then echo "R $t $u $p $ips"; last=$ips; fi; p=$t; pace; nap $P; done'
    )
    if not requests:
        return f"{prelude}; ( {rules} ) & wait"
    # an HTTP error or an empty body is no answer from a pod: a request DNATed to a gone pod's IP leaves by the default
    # route, where something else may answer; the answer's first line names the pod
    ask = (
        f"ask() {{ exec 2>/dev/null 3<>/dev/tcp/{cluster_ip}/{port} &&"
        f" printf 'GET / HTTP/1.0\\r\\nHost: {cluster_ip}:{port}\\r\\n\\r\\n' >&3 &&"
        ' read -r -t 1 -u 3 _ code _ && [ "$code" -lt 400 ] || return 1;'
        " while read -r -t 1 -u 3 l && [ -n \"${l%$'\\r'}\" ]; do :; done;"
        ' read -r -t 1 -u 3 a; a=${a%$\'\\r\'}; [ -n "$a" ] && echo "A $EPOCHREALTIME ${a%% *}"; }'
    )
    # a request DNATed to a gone endpoint hangs in connect: a watchdog ends the round's requests at 1 s; with
    # `failures` every request that got no answer prints its round's start (when it was sent). Its exit status says
    # so, not the watchdog's kill, which also succeeds on a request that answered and is not reaped yet
    waits = 'for r in $k; do wait $r 2>/dev/null || echo "F $q"; done' if failures else "wait $k 2>/dev/null"
    asking = (
        f'while :; do q=$EPOCHREALTIME; echo "Q $q"; k=;'
        f' for i in {" ".join(str(i) for i in range(REQUESTS_PER_ROUND))}; do ( ask ) & k="$k $!"; done;'
        f" ( nap 1; kill -9 $k 2>/dev/null ) & w=$!;"
        f" {waits}; kill $w 2>/dev/null; wait $w; pace; nap $P; done"
    )
    return f"{prelude}; {ask}; ( {rules} ) & ( {asking} ) & wait"


def parse_line(node: str, line: str) -> Seen | None:
    parts = line.split()
    if len(parts) < 2 or parts[0] not in ("R", "A", "F", "Q"):
        return None
    try:
        at = float(parts[1])
        if parts[0] == "R":
            if len(parts) < 4:
                return None
            since = None if parts[3] == "-" else float(parts[3])
            return RulesSeen(node, at, frozenset(parts[4:]), since, float(parts[2]))
    except ValueError:
        return None
    if parts[0] == "Q":
        return RoundSeen(node, at)
    if parts[0] == "F":
        return AnswerSeen(node, at, FAILED)
    return AnswerSeen(node, at, parts[2]) if len(parts) > 2 else None


class NodeProbe:
    """Runs the probe loop in one node and hands every parsed line to `on_seen` until stopped."""

    def __init__(self, nodes: NodeExec, node: Node, script: str, on_seen: Callable[[Seen], None]) -> None:
        self.nodes, self.node, self.on_seen = nodes, node, on_seen
        self.marker = f"chaoskit-probe-{uuid.uuid4().hex[:10]}"  # what stop() finds the loop by inside the node
        self.script = f": {self.marker}; {script}"
        self.stream: Stream | None = None
        self.thread = threading.Thread(target=self._read, name=f"probe-{node.name}", daemon=True)
        self.cpu_seconds: float | None = None  # what the loops and every command they ran cost the node, at stop

    def start(self) -> None:
        self.stream = self.nodes.lines(self.node, ["bash", "-c", self.script])
        self.thread.start()

    def _read(self) -> None:
        assert self.stream is not None
        for line in self.stream:
            seen = parse_line(self.node.name, line)
            if seen is not None:
                self.on_seen(seen)

    def stop(self) -> None:
        self.cpu_seconds = self._cpu()
        # a `docker exec` session's processes outlive its client: end the loop inside the node first
        self.nodes.run(self.node, ["pkill", "-f", self.marker], check=False)
        if self.stream is not None:
            self.stream.close()
        self.thread.join(timeout=5)

    def _cpu(self) -> float | None:
        """CPU seconds of the probe's shells, with the commands each has waited for (utime, stime, cutime, cstime)."""
        pattern = f"[{self.marker[0]}]{self.marker[1:]}"  # a regex that does not match the line asking for it
        read = f"for p in $(pgrep -f '{pattern}'); do cat /proc/$p/stat 2>/dev/null; echo; done; getconf CLK_TCK"
        done = self.nodes.run(self.node, ["sh", "-c", read], check=False)
        return probe_cpu(done.stdout)


def probe_cpu(stat_lines: str) -> float | None:
    """CPU seconds from /proc/<pid>/stat lines followed by the clock-tick rate, or None when there is none."""
    lines = [line for line in stat_lines.strip().splitlines() if line.strip()]
    if len(lines) < 2 or not lines[-1].isdigit():
        return None
    ticks = 0
    for line in lines[:-1]:
        fields = line.rsplit(")", 1)[-1].split()  # after the command name, which may hold spaces
        ticks += sum(int(f) for f in fields[11:15])  # fields 14-17 of stat: utime stime cutime cstime
    return ticks / int(lines[-1])
