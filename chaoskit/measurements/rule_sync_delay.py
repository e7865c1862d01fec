"""kube-proxy's rule-sync delay, measured once on every node: what kube-proxy.slow-sync's effect check observes.

The check changes the endpoints of a Service of its own (selectorless; its EndpointSlice written by chaoskit, its
endpoints documentation addresses that nobody answers at: kube-proxy programs them all the same) and reads each
node's rules with the rule-sync measurement's in-node probe (measurements/probe.py). A change's delay on a node is
from the API accepting it to the first rules read on that node that holds it (our clock and the node's are one: a kind
node shares the host's kernel).

In v1.34 kube-proxy's sync runner (its BoundedFrequencyRunner) leaves at least minSyncPeriod between the end of one
sync and the start of the next, with no burst: a change that arrives meanwhile waits for that, one that arrives when
the node is idle is synced at once. So only a change that lands right after a node synced shows the node's period
whole. The probe makes a first change, then the next one as soon as a node that has shown nothing yet has programmed
every change so far: that change lands in the cool-down of the sync that just programmed the last one. A node shows a
slow sync when such a change (or the first one, if kube-proxy's own metrics say it had synced before it) waited at
least the threshold; it shows a fast one when such a change was programmed sooner.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from chaoskit.env import Env
from chaoskit.figures import seconds
from chaoskit.measurements.probe import NodeProbe, RulesSeen, probe_script
from chaoskit.measurements.rule_sync_sli import scrape_sli
from chaoskit.seams.nodeexec import named

NAMESPACE = "kube-system"  # always there: nothing to create or wait out when deleting
SERVICE = "chaoskit-slow-sync-probe"
PORT = 80
PORT_NAME = "http"
FAKE_NET = "198.51.100"  # TEST-NET-2 (RFC 5737): never anyone's address
MAX_CHANGES = 6  # per measurement: two per node at most are ever needed
FIRST_READ_TIMEOUT = 15.0


@dataclass(frozen=True)
class Timing:
    right_after: float = 1.5  # a change made this soon after a node programmed the last one lands in its cool-down
    probe_lag: float = 0.5  # how late a probe line may reach us: a change counts as waiting only beyond it
    poll: float = 0.1


def probe_objects(ip: str, name: str = SERVICE, fault: str = "kube-proxy.slow-sync") -> list[dict[str, Any]]:
    """The probe's Service and its one EndpointSlice, holding the endpoint `ip`."""
    labels = {"app.kubernetes.io/managed-by": "chaoskit", "chaoskit.dev/fault": fault}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {"ports": [{"name": PORT_NAME, "port": PORT, "protocol": "TCP"}]},  # no selector: we write the slice
    }
    owners = {"kubernetes.io/service-name": name, "endpointslice.kubernetes.io/managed-by": "chaoskit"}
    slice_labels = {**labels, **owners}  # not the EndpointSlice controller's: it leaves the slice alone
    endpoint_slice = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "addressType": "IPv4",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": slice_labels},
        "ports": [{"name": PORT_NAME, "port": PORT, "protocol": "TCP"}],
        "endpoints": [endpoint(ip)],
    }
    return [service, endpoint_slice]


def endpoint(ip: str) -> dict[str, Any]:
    return {"addresses": [ip], "conditions": {"ready": True}}


SLICE_PATH = f"/apis/discovery.k8s.io/v1/namespaces/{NAMESPACE}/endpointslices/{SERVICE}"
SERVICE_PATH = f"/api/v1/namespaces/{NAMESPACE}/services/{SERVICE}"


@dataclass(frozen=True)
class Change:
    at: float  # the API accepted it
    ip: str  # the endpoint it added


@dataclass
class DelayJudge:
    """Pure: fed with the changes made and each node's rules reads, it says per node whether a change that landed in a
    sync's cool-down waited at least `threshold` (True), was programmed sooner (False), or nothing tells yet (None)."""

    nodes: tuple[str, ...]
    threshold: float
    timing: Timing = Timing()
    synced: frozenset[str] = frozenset()  # kube-proxy had synced before the first change: that change counts there
    changes: list[Change] = field(default_factory=list)
    rules: dict[str, list[tuple[float, frozenset[str]]]] = field(default_factory=dict)

    def seen(self, node: str, at: float, ips: frozenset[str]) -> None:
        self.rules.setdefault(node, []).append((at, ips))

    def read_once(self, node: str) -> bool:
        return bool(self.rules.get(node))

    def programmed(self, node: str, k: int) -> float | None:
        """When the node's rules first held change k's endpoint."""
        c = self.changes[k]
        return min((t for t, ips in self.rules.get(node, []) if t >= c.at and c.ip in ips), default=None)

    def counts(self, node: str, k: int) -> bool:
        """Whether change k landed in a sync's cool-down on the node."""
        if k == 0:
            return node in self.synced
        before = self.programmed(node, k - 1)
        return before is not None and 0 <= self.changes[k].at - before <= self.timing.right_after

    def waited(self, node: str, k: int, now: float) -> tuple[float, bool]:
        """How long change k waited on the node, and whether it is programmed yet."""
        done = self.programmed(node, k)
        if done is None:
            return max(0.0, now - self.timing.probe_lag - self.changes[k].at), False
        return done - self.changes[k].at, True

    def verdict(self, node: str, now: float) -> bool | None:
        for k in range(len(self.changes)):
            if not self.counts(node, k):
                continue
            waited, done = self.waited(node, k, now)
            if waited >= self.threshold:
                return True
            if done and k > 0:
                return False  # right after a sync, and yet synced sooner: the node is not held to the period
        return None

    def delay(self, node: str, now: float) -> float | None:
        """The delay that decided the node's verdict (a lower bound while still waiting)."""
        for k in range(len(self.changes)):
            if self.counts(node, k):
                waited, done = self.waited(node, k, now)
                if waited >= self.threshold or (done and k > 0):
                    return round(waited, 2)
        return None

    def wants_change(self, now: float) -> bool:
        """A node that has shown nothing yet has programmed every change so far: the next one lands right after."""
        return any(
            self.verdict(n, now) is None and all(self.programmed(n, k) is not None for k in range(len(self.changes)))
            for n in self.nodes
        )


@dataclass(frozen=True)
class SyncDelays:
    """One measurement: per node its verdict (True slow, False fast, None undecided) and the deciding delay."""

    threshold: float
    verdicts: dict[str, bool | None]
    delays: dict[str, float | None]
    changes: int
    seconds: float

    @property
    def slow_everywhere(self) -> bool:
        return bool(self.verdicts) and all(v is True for v in self.verdicts.values())

    @property
    def fast_everywhere(self) -> bool:
        return bool(self.verdicts) and all(v is False for v in self.verdicts.values())

    def __str__(self) -> str:
        shown = ", ".join(f"{n} {_shown(self.verdicts[n], d)}" for n, d in sorted(self.delays.items()))
        said = f"threshold {seconds(self.threshold)}, {self.changes} changes, {seconds(self.seconds)}"
        return f"rule-sync delays ({said}): {shown}"


def _shown(verdict: bool | None, delay: float | None) -> str:
    if verdict is None or delay is None:
        return "undecided"
    return f"≥{delay}s (slow)" if verdict else f"{delay}s (fast)"


def fresh_ip(taken: Iterable[str]) -> str:
    used = set(taken)
    return next(ip for i in range(1, 255) if (ip := f"{FAKE_NET}.{i}") not in used)


OnRules = Callable[[str, float, frozenset[str]], None]  # node, read at, the probe Service's endpoints in its rules


class RulesProbe(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...


def node_probe(env: Env, node: str, cluster_ip: str, on_rules: OnRules) -> RulesProbe:
    """The rule-sync measurement's in-node probe, reading the probe Service's endpoints in the node's rules."""

    def seen(s: object) -> None:
        if isinstance(s, RulesSeen):
            on_rules(s.node, s.at, s.ips)

    return NodeProbe(
        env.nodes, named(node), probe_script(NAMESPACE, SERVICE, cluster_ip, PORT, port_name=PORT_NAME), seen
    )


def kube_proxy_synced(env: Env, node: str) -> bool:
    """kube-proxy's own metrics on the node say it finished a rule sync since it started."""
    return scrape_sli(env.nodes, named(node), time.time()).last_sync is not None


def measure(
    env: Env,
    nodes: Iterable[str],
    threshold: float,
    timeout: float,
    *,
    all_nodes: bool = False,
    timing: Timing = Timing(),
    probe: Callable[[Env, str, str, OnRules], RulesProbe] = node_probe,
    synced: Callable[[Env, str], bool] = kube_proxy_synced,
) -> SyncDelays:
    """Change the probe Service's endpoints and time them on every node until each node is decided slow, or one is
    decided fast (with `all_nodes`: until every node is decided), or `timeout`."""
    names = tuple(sorted(nodes))
    judge = DelayJudge(names, threshold, timing)
    lock = threading.Lock()
    cluster_ip = env.kube.get(SERVICE_PATH)["spec"]["clusterIP"]

    def on_rules(node: str, at: float, ips: frozenset[str]) -> None:
        with lock:
            judge.seen(node, at, ips)

    probes = [probe(env, n, cluster_ip, on_rules) for n in names]
    started = time.time()
    for p in probes:
        p.start()
    try:
        first_read = time.time() + FIRST_READ_TIMEOUT
        while time.time() < first_read and not all(judge.read_once(n) for n in names):
            time.sleep(timing.poll)
        judge.synced = frozenset(n for n in names if synced(env, n))
        current = [ip for ep in env.kube.get(SLICE_PATH).get("endpoints") or [] for ip in ep.get("addresses", [])]
        ips = [fresh_ip(current)]  # the first change replaces whatever an earlier measurement left
        deadline = time.time() + timeout
        while True:
            if len(judge.changes) < len(ips):
                env.kube.patch(SLICE_PATH, {"endpoints": [endpoint(ip) for ip in ips]})
                with lock:
                    judge.changes.append(Change(time.time(), ips[-1]))
            now = time.time()
            with lock:
                verdicts = {n: judge.verdict(n, now) for n in names}
                wants = judge.wants_change(now)
            decided = all(v is not None for v in verdicts.values())
            if decided or (not all_nodes and False in verdicts.values()) or now >= deadline:
                break
            if wants and len(ips) < MAX_CHANGES:
                ips.append(fresh_ip(ips))
            time.sleep(timing.poll)
        with lock:
            delays = {n: judge.delay(n, now) for n in names}
            return SyncDelays(threshold, verdicts, delays, len(judge.changes), time.time() - started)
    finally:
        for p in probes:
            p.stop()
