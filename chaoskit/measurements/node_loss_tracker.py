"""The pure side of node loss (node_loss.py says what each stage means): fed with what the watches and the in-node
rule probes saw, each with the time it was seen, it finds each node that went NotReady and times the path from its
last heartbeat to its pods serving again elsewhere. No I/O and no clock of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from chaoskit.components.node_lifecycle import UNREACHABLE, toleration_of
from chaoskit.figures import seconds
from chaoskit.measurements.probe import RulesSeen
from chaoskit.measurements.watch import Obj
from chaoskit.model.timeline import (
    CLOCK_RESOLUTION,
    LOST_NODE,
    STAGE_COMPONENTS,
    Sample,
    Stamp,
    api_time,
)
from chaoskit.seams.kube import condition

TYPE = "node_loss"


@dataclass
class Loss:
    """One node lost: when its heartbeat last reached the API server, and what the node controller did after."""

    run: int
    node: str
    heartbeat: Stamp | None  # the lease's last renewal before NotReady (kubelet's own µs clock)
    not_ready: Stamp
    tainted: Stamp | None = None
    back: Stamp | None = None  # Ready again


@dataclass
class Evicted:
    """A pod of the lost node deleted by the node controller, and the replacement its ReplicaSet made for it."""

    run: int
    pod: str
    evicted: Stamp
    toleration: float | None  # what the pod's own spec said (None: for ever), beside what its eviction took
    replacement: str = ""
    created: Stamp | None = None
    scheduled: Stamp | None = None
    ready: Stamp | None = None
    endpoint: Stamp | None = None
    ip: str = ""
    node: str = ""


@dataclass
class NodeLossTracker:
    """Pure: the watches' and probes' observations in, stage samples out."""

    watch_precision: float = CLOCK_RESOLUTION  # how late a watch event may arrive here: measured over the run
    renewed: dict[str, float] = field(default_factory=dict)  # node -> its lease's latest renewTime
    ready: dict[str, bool] = field(default_factory=dict)  # node -> Ready=True as last seen
    losses: list[Loss] = field(default_factory=list)
    on_node: dict[str, str] = field(default_factory=dict)  # pod name -> its node, as last seen
    evicted: list[Evicted] = field(default_factory=list)
    pods: dict[str, Obj] = field(default_factory=dict)  # pod name -> last seen, for ones created after an eviction
    rules: dict[str, list[RulesSeen]] = field(default_factory=dict)  # node -> every change of its rules, by time

    def _watched(self, at: float) -> Stamp:
        return Stamp(at)  # its precision is the watch delay measured until the end

    def lease(self, kind: str, obj: Obj, at: float) -> None:
        renewed = api_time((obj.get("spec") or {}).get("renewTime"))
        if renewed is not None:
            self.renewed[obj["metadata"]["name"]] = renewed

    def node(self, kind: str, obj: Obj, at: float) -> None:
        name = obj["metadata"]["name"]
        ready = condition(obj, "Ready")
        was = self.ready.get(name)
        self.ready[name] = ready
        loss = self._open(name)
        if kind != "LISTED" and was and not ready and loss is None:
            renewed = self.renewed.get(name)
            heartbeat = None if renewed is None or renewed > at else Stamp(renewed, CLOCK_RESOLUTION)
            self.losses.append(Loss(len(self.losses), name, heartbeat, self._watched(at)))
            loss = self.losses[-1]
        if loss is None:
            return
        taints = obj.get("spec", {}).get("taints") or []
        if loss.tainted is None and any(t.get("key") == UNREACHABLE and t.get("effect") == "NoExecute" for t in taints):
            loss.tainted = self._watched(at)
        if ready:
            loss.back = self._watched(at)

    def _open(self, node: str) -> Loss | None:
        """The node's loss still under way (not Ready again)."""
        return next((x for x in reversed(self.losses) if x.node == node and x.back is None), None)

    def pod(self, kind: str, obj: Obj, at: float) -> None:
        meta, name = obj.get("metadata", {}), obj.get("metadata", {}).get("name", "")
        node = obj.get("spec", {}).get("nodeName") or ""
        if node:
            self.on_node[name] = node
        loss = next((x for x in reversed(self.losses) if x.node == self.on_node.get(name) and x.tainted), None)
        known = any(e.pod == name for e in self.evicted)
        if loss is not None and not known and (meta.get("deletionTimestamp") or kind == "DELETED"):
            self.evicted.append(Evicted(loss.run, name, self._watched(at), toleration_of(obj)))
            return
        if kind == "DELETED" or known or meta.get("deletionTimestamp"):
            return
        mine = next((e for e in self.evicted if e.replacement == name), None)
        if mine is None and kind == "ADDED":
            mine = next((e for e in self.evicted if not e.replacement), None)  # first evicted, first replaced
            if mine is not None:
                mine.replacement, mine.created = name, self._watched(at)
        if mine is None:
            return
        mine.node, mine.ip = node, obj.get("status", {}).get("podIP") or mine.ip
        if mine.scheduled is None and condition(obj, "PodScheduled"):
            mine.scheduled = self._watched(at)
        if mine.ready is None and condition(obj, "Ready"):
            mine.ready = self._watched(at)

    def endpoint_slice(self, kind: str, obj: Obj, at: float) -> None:
        for ep in obj.get("endpoints") or []:
            target = (ep.get("targetRef") or {}).get("name", "")
            if (ep.get("conditions") or {}).get("ready") is not True:
                continue
            for e in self.evicted:
                if e.replacement == target and e.endpoint is None:
                    e.endpoint = self._watched(at)

    def seen(self, seen: RulesSeen) -> None:
        self.rules.setdefault(seen.node, []).append(seen)

    def _rules_end(self, e: Evicted, node: str) -> RulesSeen | None:
        """The first read of `node`'s rules holding the replacement's IP, after its endpoint became ready."""
        if not e.ip or e.endpoint is None:
            return None
        return next((r for r in self.rules.get(node, []) if e.ip in r.ips and r.until >= e.endpoint.at), None)

    def samples(self, nodes: list[str]) -> list[Sample]:
        out: list[Sample] = []

        def add(stage: str, subject: str, run: int, start: Stamp | None, end: Stamp | None) -> None:
            if start is not None and end is not None:
                precision = max(start.within(self.watch_precision), end.within(self.watch_precision))
                out.append(Sample(TYPE, stage, STAGE_COMPONENTS[stage], subject, start.at, end.at, precision, run))

        for loss in self.losses:
            add("not_ready", f"{LOST_NODE}{loss.node}", loss.run, loss.heartbeat, loss.not_ready)
            add("tainted", f"{LOST_NODE}{loss.node}", loss.run, loss.not_ready, loss.tainted)
        for e in self.evicted:
            loss = self.losses[e.run]
            add("evicted", e.pod, e.run, loss.tainted, e.evicted)
            add("replacement_created", e.pod, e.run, e.evicted, e.created)
            add("scheduled", e.pod, e.run, e.created, e.scheduled)
            add("ready", e.pod, e.run, e.scheduled, e.ready)
            add("endpoint_ready", e.pod, e.run, e.ready, e.endpoint)
            for node in nodes:
                if node == loss.node:  # its kube-proxy hears nothing while it is cut off
                    continue
                seen = self._rules_end(e, node)
                end = None if seen is None else Stamp(seen.until, seen.precision)
                add("rules_programmed", f"{e.pod}@{node}", e.run, e.endpoint, end)
        return out

    def in_flight(self, nodes: list[str]) -> int:
        """Evicted pods whose replacement has not reached every other node's rules yet."""
        others = {e.run: [n for n in nodes if n != self.losses[e.run].node] for e in self.evicted}
        return sum(1 for e in self.evicted if any(self._rules_end(e, n) is None for n in others[e.run]))

    def notes(self) -> list[str]:
        out = [
            f"node {x.node} lost (run {x.run})"
            + ("" if x.tainted else ": never tainted unreachable while measured")
            + ("" if x.back is None else f", Ready again {seconds(x.back.at - x.not_ready.at)} after it went NotReady")
            for x in self.losses
        ]
        out += [
            f"{e.pod} evicted"
            + (f", replaced by {e.replacement} on {e.node or 'no node yet'}" if e.replacement else "")
            for e in self.evicted
        ]
        return out
