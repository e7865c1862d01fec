"""kube-proxy rule-sync delay: for every change of a Service's ready endpoints, how long until each node's rules hold
the new set (`rules_programmed`) and until requests from that node follow it (`traffic_follows`), next to kube-proxy's
own SLI, `kubeproxy_network_programming_duration_seconds`.

Stages (RULE_SYNC_STAGES), both starting when our EndpointSlice watch received the change:
- rules_programmed: the node's rules (iptables-save / nft, read in the node) hold exactly the new endpoint set, or a
  later change's set that includes this one (a change superseded before the node synced is programmed with the next);
- traffic_follows: requests through the Service from the node follow the change. For an added endpoint: the first
  answer from its pod. For a removed one: the first probe round after the last request that still reached it (an
  answer from its pod, or a request sent while the node's rules still held it that got no answer: the workload
  stops listening at SIGTERM, so a request DNATed to a terminating pod is refused, or hangs once the pod is gone).
  Bias: each round sends 4 parallel requests that kube-proxy balances at random, so with k endpoints a round reaches
  a given one with p = 1 - (1 - 1/k)^4: an added endpoint reads late by 1/p - 1 rounds on average (a quarter round at
  k=3, two at k=10), and a removed one that happens not to be reached reads early, by as much.

Where each timestamp comes from, and so its precision:
- the endpoint change: our watch receiving the EndpointSlice (our clock, ~1 ms; kube-proxy's own watch may get it a
  few ms before or after us). A change seen only in a re-list after a watch gap is kept but not timed;
- the rules and the answers: the in-node probe (probe.py), stamped with the node's clock, which is the host's (a kind
  node shares its kernel). Each loop pauses 100 ms between rounds, but a rules round also takes its read (tens of
  ms) and a request round its requests (up to 1.1 s when one hangs on a gone endpoint), so each sample carries the
  precision measured for it: for rules_programmed, from the start of the read that saw the old rules to the end of
  the one that saw the new; for traffic_follows, from the start of the round that last saw the old traffic (the
  round before the first answer from an added pod, or the last round that still reached a removed one) to the answer
  that ended the stage. The result notes each loop's real spacing per node. A stage whose end was seen before our
  watch saw the change (kube-proxy's watch ahead of ours) reads 0 and is named in the notes;
- the slice's `endpoints.kubernetes.io/last-change-trigger-time` annotation: the pod's Ready transition, 1 s. It is
  where kube-proxy's SLI starts; a terminating endpoint's update carries none, so kube-proxy times no removal;
- kube-proxy's SLI: its histogram scraped in each node, on its loopback, at start, at every `mark()` and at stop;
  the delta gives count and mean. It has no Service label: other Services' changes meanwhile are counted too, which
  the result reports as `unmatched` observations. kube-proxy's sync timestamps (node clock, ms) say whether a queued
  change waits for a sync.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from pydantic import Field

from chaoskit.components.table import DATAPLANE
from chaoskit.figures import seconds
from chaoskit.measurements.background_services import MAX_SERVICES, BackgroundServices, resize_and_wait
from chaoskit.measurements.base import Measurement, MissingPiece, TargetParams, must_get, register
from chaoskit.measurements.probe import INTERVAL, NodeProbe, Seen, probe_script
from chaoskit.measurements.rule_sync_sli import SliSnapshot, compare_sli, scrape_sli
from chaoskit.measurements.rule_sync_tracker import TYPE, EndpointChange, RuleSyncTracker
from chaoskit.measurements.watch import Obj, WatchDelaySampler, Watcher
from chaoskit.model.kwok import REAL_NODES_SELECTOR
from chaoskit.model.params import params_of
from chaoskit.model.timeline import MeasurementResult
from chaoskit.seams.nodeexec import api_nodes

__all__ = ["TYPE", "MissingPiece", "RuleSync", "RuleSyncParams"]


class RuleSyncParams(TargetParams):
    sli: bool = Field(default=True, description="Scrape kube-proxy's own SLI in every node at start and stop.")
    services: int = Field(
        default=0,
        ge=0,
        le=MAX_SERVICES,
        description="Background Services to make first (selectorless, endpoints at placeholder addresses, no pods) "
        "and remove at the end: kube-proxy's rules then hold as many Services as a cluster of that size. The "
        "measurement starts once every node's kube-proxy programmed them.",
    )
    endpoints_per_service: int = Field(default=1, ge=1, le=100, description="Endpoints of each background Service.")


@register
class RuleSync(Measurement):
    """kube-proxy rule-sync delay per endpoint change and node (rules programmed, traffic following), next to
    kube-proxy's own network-programming SLI."""

    name = TYPE
    every_node = DATAPLANE
    Params = RuleSyncParams

    def start(self) -> None:
        p = self.p = params_of(self.params, RuleSyncParams)
        kube, ns = self.env.kube, p.namespace or self.namespace
        svc = must_get(kube, f"/api/v1/namespaces/{ns}/services/{p.service}", f"Service {ns}/{p.service}")
        self.result = MeasurementResult(self.label, TYPE, time.time())
        affinity = svc["spec"].get("sessionAffinity") == "ClientIP"
        self.tracker = RuleSyncTracker(self.result.started_at, traffic=p.first_request, affinity=affinity)
        if affinity and p.first_request:
            self.result.notes.append(
                f"Service {ns}/{p.service} has sessionAffinity ClientIP: kube-proxy keeps each node's requests on the "
                "pod they first reached, so traffic_follows is timed only for changes that remove an endpoint"
            )
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        # kube-proxy runs on the real nodes only: a simulated one has no rules to read
        self.real = api_nodes(kube.get("/api/v1/nodes", labelSelector=REAL_NODES_SELECTOR)["items"])
        self.nodes: list[str] = [n.name for n in self.real]
        self.background = BackgroundServices(kube, p.endpoints_per_service)
        try:
            if p.services:
                self._grow_background(p.services)
            self._observe(p, ns, svc)
        except BaseException:
            self.background.remove(wait=False)  # a measurement that did not start is never stopped
            raise

    def _grow_background(self, services: int) -> None:
        grown = resize_and_wait(self.env.nodes, self.real, self.background, services, say=self.say)
        self.result.extra["background"] = grown
        if slow := [n for n, s in grown["programmed_s"].items() if s is None]:
            self.result.errors.append(f"kube-proxy on {', '.join(slow)} did not program {services} Services in time")

    def _observe(self, p: RuleSyncParams, ns: str, svc: dict[str, Any]) -> None:
        kube = self.env.kube
        self.snapshots: list[list[SliSnapshot]] = []
        if p.sli:
            self.mark()
        port = svc["spec"]["ports"][0]
        script = probe_script(
            ns,
            p.service,
            svc["spec"]["clusterIP"],
            int(port["port"]),
            failures=True,
            requests=p.first_request,
            port_name=port.get("name", ""),
        )
        if not p.first_request:
            self.result.notes.append(
                f"traffic_follows not measured: Service {ns}/{p.service} is not known to answer "
                "with its pod's name (first_request is off); rules_programmed only"
            )
        self.probes = [NodeProbe(self.env.nodes, n, script, self._seen) for n in self.real]
        self.watcher = Watcher(
            kube,
            f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
            self._slice,
            self.stop_event,
            labelSelector=f"kubernetes.io/service-name={p.service}",
        )
        for probe in self.probes:  # before the watch: each node's rules are known before the first change
            probe.start()
        self.watcher.start()
        self.watch_delay = WatchDelaySampler(kube).start()  # last: a failed start leaves none running

    def _seen(self, seen: Seen) -> None:
        with self.lock:
            self.tracker.seen(seen)

    def _slice(self, kind: str, obj: Obj, at: float) -> None:
        with self.lock:
            self.tracker.endpoint_slice(kind, obj, at)

    def mark(self) -> None:
        """Scrape kube-proxy's SLI in every node now: the driver calls it between changes, for per-change figures."""
        self.snapshots.append([scrape_sli(self.env.nodes, node, time.time()) for node in self.real])

    def changes(self) -> list[EndpointChange]:
        with self.lock:
            return list(self.tracker.changes)

    def endpoints(self) -> frozenset[str]:
        """The endpoint set the nodes' rules should hold now."""
        with self.lock:
            return self.tracker.current

    def converged(self) -> bool:
        with self.lock:
            return self.tracker.converged(self.nodes)

    def stop(self) -> MeasurementResult:
        self.stop_event.set()
        if self.p.sli:
            self.mark()
        for probe in self.probes:
            probe.stop()
        self.watcher.join()  # up to a watch window (5 s): the stream is only checked between events
        self.background.remove()
        res = self.result
        self.tracker.watch_precision = self.watch_delay.finish(res).max
        res.finished_at = time.time()
        with self.lock:
            res.samples = self.tracker.samples(self.nodes)
            res.notes += self.tracker.incomplete(self.nodes)
            res.notes += self.tracker.clamped(self.nodes)
            res.extra["changes"] = [c.to_dict() for c in self.tracker.changes]
            res.extra["nodes"] = self.nodes
            res.extra["probe_rounds"] = rounds = self.tracker.probe_rounds()
            res.extra["probe_cpu_seconds"] = {probe.node.name: probe.cpu_seconds for probe in self.probes}
            if len(self.snapshots) >= 2:
                res.extra["kube_proxy"] = compare_sli(self.tracker, self.nodes, self.snapshots)
        res.notes += [rounds_note(node, loops) for node, loops in rounds.items()]
        res.gaps = list(self.watcher.gaps)
        res.errors += self.watcher.errors
        if not self.tracker.changes:
            res.notes.append("the Service's ready endpoints did not change while measuring: no samples")
        return res


def rounds_note(node: str, loops: dict[str, dict[str, float]]) -> str:
    """How far apart the probe's rounds really were on one node: what its samples' precision is made of."""
    parts = {"requests": ("request rounds", "apart"), "rules": ("rules reads bracketing a change", "wide")}
    said = [
        f"{parts[loop][0]} median {seconds(r['median'])}, max {seconds(r['max'])} {parts[loop][1]}"
        for loop, r in loops.items()
    ]
    return f"probe on {node}: {'; '.join(said)} (nominal {seconds(INTERVAL)})"
