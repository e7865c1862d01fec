"""Node loss: from a node's last heartbeat to its workload's pods serving again on other nodes, in stages each owned
by one component (NODE_LOSS_STAGES): heartbeat stops → NotReady (the node-monitor grace period) → tainted
`unreachable` → each pod evicted at its toleration → replacement created → scheduled → Ready → in the EndpointSlice
→ in every other node's rules.

Where each timestamp comes from, and so its precision:
- last heartbeat: the node's Lease renewTime, stamped by kubelet's own clock in microseconds (a kind node shares the
  host's clock);
- NotReady, tainted, evicted, replacement created, scheduled, Ready, in the EndpointSlice: when our watch received
  the change (ms late at most as much as the watch delay measured over the run);
- in a node's rules: the in-node probe's reads of the rules, bracketed by the read that last saw them without the IP.

Two stages are settings, not work: `not_ready` lasts the controller manager's node-monitor grace period and `evicted`
the pod's tolerationSeconds; the result says both beside the stock budget (50 s + 300 s).
"""

from __future__ import annotations

import time
from typing import Any

from chaoskit.components import node_lifecycle
from chaoskit.components.table import DATAPLANE
from chaoskit.errors import ToolError
from chaoskit.figures import seconds
from chaoskit.measurements.base import Measurement, TargetParams, must_get, register
from chaoskit.measurements.node_loss_tracker import TYPE, NodeLossTracker
from chaoskit.measurements.observed import Observers
from chaoskit.measurements.probe import NodeProbe, RulesSeen, Seen, probe_script
from chaoskit.measurements.watch import Obj, WatchDelaySampler, Watcher
from chaoskit.model.kwok import REAL_NODES_SELECTOR
from chaoskit.model.timeline import MeasurementResult
from chaoskit.seams.kube import Kube
from chaoskit.seams.nodeexec import api_nodes
from chaoskit.subject import PLURAL

SETTLE = 90.0  # how long stop() waits for the replacements of evicted pods still on their way to every node's rules
STOCK_BUDGET = node_lifecycle.DEFAULT_GRACE + node_lifecycle.DEFAULT_TOLERATION


def grace_period_of(kube: Kube) -> float | None:
    """The node-monitor grace period the cluster's controller manager runs with, from its static pod's command; None
    where no such pod shows (a managed control plane)."""
    try:
        pods = kube.get("/api/v1/namespaces/kube-system/pods", labelSelector="component=kube-controller-manager")
        spec = pods["items"][0]["spec"]
    except (ToolError, IndexError, KeyError):
        return None
    return node_lifecycle.grace_period(
        [a for c in spec["containers"] for a in c.get("command", []) + c.get("args", [])]
    )


@register
class NodeLoss(Measurement):
    """A node lost and its pods back elsewhere, stage by stage, each stage owned by one component."""

    name = TYPE
    every_node = DATAPLANE
    Params = TargetParams

    def start(self) -> None:
        p = self.params if isinstance(self.params, TargetParams) else TargetParams()
        kube, ns = self.env.kube, self.namespace
        self.result = MeasurementResult(self.label, TYPE, time.time())
        self.tracker = NodeLossTracker()
        workload = must_get(kube, f"/apis/apps/v1/namespaces/{ns}/{PLURAL[p.kind]}/{p.deployment}", p.kind)
        svc = must_get(kube, f"/api/v1/namespaces/{ns}/services/{p.service}", "Service")
        selector = ",".join(f"{k}={v}" for k, v in workload["spec"]["selector"]["matchLabels"].items())
        self.result.extra["settings"] = self._settings(workload)
        # the lost node and the probes are real nodes: a simulated one has no dataplane and is never partitioned
        real = kube.get("/api/v1/nodes", labelSelector=REAL_NODES_SELECTOR)["items"]
        self.real = api_nodes(real)
        self.nodes: list[str] = [n.name for n in self.real]
        self.seen = o = Observers()
        t, stop = self.tracker, o.stop_event
        o.watchers = [
            Watcher(kube, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", o.locked(t.lease), stop),
            Watcher(kube, "/api/v1/nodes", o.locked(t.node), stop, labelSelector=REAL_NODES_SELECTOR),
            Watcher(kube, f"/api/v1/namespaces/{ns}/pods", o.locked(t.pod), stop, labelSelector=selector),
            Watcher(
                kube,
                f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices",
                o.locked(t.endpoint_slice),
                stop,
                labelSelector=f"kubernetes.io/service-name={p.service}",
            ),
        ]
        port = svc["spec"]["ports"][0]
        cluster_ip = svc["spec"].get("clusterIP", "")
        script = probe_script(
            ns, p.service, cluster_ip, int(port["port"]), requests=False, port_name=port.get("name", "")
        )
        rules = o.locked_one(self._rules)
        o.probes = [NodeProbe(self.env.nodes, n, script, rules) for n in self.real]
        o.start()
        self.watch_delay = WatchDelaySampler(kube).start()  # last: a failed start leaves none running

    def _rules(self, seen: Seen) -> None:
        if isinstance(seen, RulesSeen):  # the probe reads the rules only
            self.tracker.seen(seen)

    def _settings(self, workload: Obj) -> dict[str, Any]:
        """The two settings the path waits on: the controller manager's grace period and the pods' toleration."""
        return {
            "node_monitor_grace_period_s": grace_period_of(self.env.kube),
            "toleration_s": node_lifecycle.toleration_of(workload["spec"]["template"]),
            "stock_budget_s": STOCK_BUDGET,
        }

    def stop(self) -> MeasurementResult:
        # let replacements caught mid-way reach every node's rules
        settled, in_flight = self.seen.settle(lambda: self.tracker.in_flight(self.nodes), SETTLE)
        self.seen.stop()
        res = self.result
        self.tracker.watch_precision = self.watch_delay.finish(res).max
        res.finished_at = time.time()
        with self.seen.lock:
            res.samples = self.tracker.samples(self.nodes)
            res.notes += self.tracker.notes()
        settings = res.extra["settings"]
        grace, toleration = settings["node_monitor_grace_period_s"], settings["toleration_s"]
        res.notes.append(
            f"settings, not work: not_ready waits the node-monitor grace period "
            f"({'unknown' if grace is None else f'{grace:g} s'}), evicted the pods' toleration of the unreachable "
            f"taint ({'for ever' if toleration is None else f'{toleration:g} s'}); stock: "
            f"{node_lifecycle.DEFAULT_GRACE:g} s + {node_lifecycle.DEFAULT_TOLERATION} s = {STOCK_BUDGET:g} s"
        )
        if settled >= 1:
            left = f"; {in_flight} still on its way" if in_flight else ""
            res.notes.append(f"stopping waited {seconds(settled)} for replacements to reach every node's rules{left}")
        res.gaps = self.seen.gaps
        if not self.tracker.losses:
            res.notes.append("no node went NotReady while measuring: no samples")
        return res
