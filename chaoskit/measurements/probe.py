"""The in-node probe both measurements read the dataplane with: one shell per node, started once.

Polling with one `docker exec` per look would cost a process start on the host every 100 ms per node; loops
inside the node read the rules (iptables-save or nft, whichever mode kube-proxy runs) and ask the Service, then
print only what changed, stamped with the node's clock (the host's: a kind node shares its kernel). The rules and
the requests run in two loops, so a request hanging on a gone endpoint (up to curl's 1 s) does not delay the next
rules read.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from chaoskit.cluster.nodeexec import NodeExec, Stream

INTERVAL = 0.1  # the resolution the rule-sync measurement promises
REQUESTS_PER_ROUND = 4  # parallel requests each round: a new endpoint among k is hit with probability 4/k


@dataclass(frozen=True)
class RulesSeen:
    node: str
    at: float
    ips: frozenset[str]  # endpoint IPs of the Service present in the node's rules


@dataclass(frozen=True)
class AnswerSeen:
    node: str
    at: float
    pod: str  # the pod that answered a request through the Service (the workload answers with its hostname)


FAILED = ""  # AnswerSeen.pod of a request that got no answer (refused or timed out): `at` is when it was sent


def probe_script(namespace: str, service: str, cluster_ip: str, port: int, failures: bool = False) -> str:
    """The loops run inside a node: `R <t> <ip>...` when the rules change, `A <t> <pod>` per answer, and with
    `failures` `F <t sent>` per request that got no answer."""
    ns_svc = f"{namespace}/{service}"
    # nftables: only the service chain's `goto endpoint-<hash>-<ns>/<svc>/<proto>/<port>__<ip>/<port>` verdicts count;
    # a removed endpoint's chain is flushed but stays declared until a later sync deletes it
    nft = (
        "nft list table ip kube-proxy 2>/dev/null"
        f" | grep -o 'goto endpoint-[A-Z0-9]*-{ns_svc}/[a-z]*/[a-z0-9-]*__[0-9.]*' | sed 's/.*__//'"
    )
    ipt = (
        f"iptables-save -t nat 2>/dev/null | grep -- '--comment \"\\?{ns_svc}[:\" ]' | grep -o 'to-destination [0-9.]*'"
        " | sed 's/to-destination //'"
    )  # iptables: the KUBE-SEP DNAT rules carry the Service's name as a comment
    url = f"http://{cluster_ip}:{port}/"
    # an HTTP error or an empty body is no answer from a pod: a request DNATed to a gone pod's IP leaves by the default
    # route, where something else may answer
    ask = f'a=$(curl -sf --max-time 1 {url}) && [ -n "$a" ] && echo "A $(date +%s.%N) $a"'
    if failures:  # stamped when sent: a request hanging on a gone endpoint fails only at curl's timeout
        ask = f's=$(date +%s.%N); {ask} || echo "F $s"'
    rules = (
        "last=x; while :; do t=$(date +%s.%N);"
        f" if nft list table ip kube-proxy >/dev/null 2>&1; then ips=$({nft} | sort -u | tr '\\n' ' ');"
        f" else ips=$({ipt} | sort -u | tr '\\n' ' '); fi;"
        f' if [ "$ips" != "$last" ]; then echo "R $t $ips"; last=$ips; fi; sleep {INTERVAL}; done'
    )
    requests = (
        "while :; do" + "".join(f" ( {ask} ) &" for _ in range(REQUESTS_PER_ROUND)) + f" wait; sleep {INTERVAL}; done"
    )
    return f"( {rules} ) & ( {requests} ) & wait"


def parse_line(node: str, line: str) -> RulesSeen | AnswerSeen | None:
    parts = line.split()
    if len(parts) < 2 or parts[0] not in ("R", "A", "F"):
        return None
    try:
        at = float(parts[1])
    except ValueError:
        return None
    if parts[0] == "R":
        return RulesSeen(node, at, frozenset(parts[2:]))
    if parts[0] == "F":
        return AnswerSeen(node, at, FAILED)
    return AnswerSeen(node, at, parts[2]) if len(parts) > 2 else None


class NodeProbe:
    """Runs the probe loop in one node and hands every parsed line to `on_seen` until stopped."""

    def __init__(
        self, nodes: NodeExec, node: str, script: str, on_seen: Callable[[RulesSeen | AnswerSeen], None]
    ) -> None:
        self.nodes, self.node, self.on_seen = nodes, node, on_seen
        self.marker = f"chaoskit-probe-{uuid.uuid4().hex[:10]}"  # what stop() finds the loop by inside the node
        self.script = f": {self.marker}; {script}"
        self.stream: Stream | None = None
        self.thread = threading.Thread(target=self._read, name=f"probe-{node}", daemon=True)

    def start(self) -> None:
        self.stream = self.nodes.lines(self.node, ["sh", "-c", self.script])
        self.thread.start()

    def _read(self) -> None:
        assert self.stream is not None
        for line in self.stream:
            seen = parse_line(self.node, line)
            if seen is not None:
                self.on_seen(seen)

    def stop(self) -> None:
        # a `docker exec` session's processes outlive its client: end the loop inside the node first
        self.nodes.run(self.node, ["pkill", "-f", self.marker], check=False)
        if self.stream is not None:
            self.stream.close()
        self.thread.join(timeout=5)
