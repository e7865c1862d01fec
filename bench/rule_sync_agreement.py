"""Benchmark: how closely our rule-sync figure agrees with kube-proxy's own SLI, per node, in the current proxy mode.

    python bench/rule_sync_agreement.py [--changes 12] [--name chaoskit] [--json]

Makes N endpoint changes (scale-up, scale-down, pod-deleted in turn) on a workload of its own, in a namespace it
deletes at the end, and scrapes kube-proxy's SLI (kubeproxy_network_programming_duration_seconds) in every node
between changes. For each stretch between two scrapes, the SLI's mean is set against ours from the same start (the
trigger-time annotation, to the rules seen by our probe): per node, the mean and the max difference, over every
stretch and over the clean ones (where the SLI saw no update but this Service's). Also our own rules_programmed and
traffic_follows, p50 and max. Scale-downs carry no trigger time, so kube-proxy does not time them: they have no pair.
"""

from __future__ import annotations

import argparse
import json
import uuid
from itertools import cycle, islice
from typing import Any

from chaoskit.components.kube_proxy import proxied_nodes, running_mode
from chaoskit.env import connect
from chaoskit.measurements.rule_sync_driver import CHANGES, run_changes
from chaoskit.model.timeline import MeasurementResult, summarize
from chaoskit.progress import Progress


def _stats(diffs: list[float]) -> dict[str, Any]:
    return {
        "stretches": len(diffs),
        "mean": sum(diffs) / len(diffs) if diffs else None,
        "max_abs": max((abs(d) for d in diffs), default=None),
    }


def agreement(result: MeasurementResult) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for node, row in result.extra["kube_proxy"].items():
        stretches = row["stretches"] or [row]
        paired = [s for s in stretches if s["difference"] is not None]
        ours = {}
        for stage in ("rules_programmed", "traffic_follows"):
            sm = summarize(s for s in result.samples if s.stage == stage and s.subject.endswith(f"@{node}"))
            ours[stage] = {"count": sm.count, "p50": sm.p50, "max": sm.max}
        out[node] = {
            "sli": row["sli"],
            "ours_from_trigger": row["ours_from_trigger"],
            "rules_programmed_mean": row["rules_programmed"]["mean"],
            "difference_overall": row["difference"],
            "all": _stats([s["difference"] for s in paired]),
            "clean": _stats([s["difference"] for s in paired if s["unmatched"] == 0]),
            **ours,
        }
    return out


def _f(v: float | None) -> str:
    return "—" if v is None else f"{v:+.3f}s" if v < 0 else f"{v:.3f}s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--changes", type=int, default=12, help="endpoint changes to make (scale-up, scale-down, ...)")
    ap.add_argument("--name", default="chaoskit", help="kind cluster name")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    env = connect(args.name, via="docker")
    kube = env.kube
    modes = sorted({running_mode(env.nodes, n) for n in proxied_nodes(kube)})
    sequence = list(islice(cycle(CHANGES), args.changes))
    result = run_changes(env, f"chaoskit-bench-rule-sync-{uuid.uuid4().hex[:5]}", sequence, say=Progress().info)
    figures = agreement(result)
    if args.json:
        print(json.dumps({"mode": modes, "changes": len(result.extra["changes"]), "nodes": figures}, indent=2))
        return
    print(
        f"kube-proxy mode {'/'.join(modes)}: {len(sequence)} actions, {len(result.extra['changes'])} endpoint changes"
    )
    print(
        f"{'node':24} {'SLI n':>5} {'SLI mean':>9} {'ours(trig)':>10} {'all: mean':>10} {'max|d|':>8} "
        f"{'clean: n':>8} {'mean':>8} {'max|d|':>8}   rules p50/max    traffic p50/max"
    )
    for node, f in figures.items():
        rp, tf = f["rules_programmed"], f["traffic_follows"]
        print(
            f"{node:24} {f['sli']['count']:>5} {_f(f['sli']['mean']):>9} {_f(f['ours_from_trigger']['mean']):>10} "
            f"{_f(f['all']['mean']):>10} {_f(f['all']['max_abs']):>8} {f['clean']['stretches']:>8} "
            f"{_f(f['clean']['mean']):>8} {_f(f['clean']['max_abs']):>8}   "
            f"{_f(rp['p50'])}/{_f(rp['max'])}  {_f(tf['p50'])}/{_f(tf['max'])}"
        )
    for note in result.notes:
        print(note)


if __name__ == "__main__":
    main()
