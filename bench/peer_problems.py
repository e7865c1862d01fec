"""Benchmark: the peers' own Kubernetes-platform problems (SREGym, ITBench, AIOpsLab), broken by hand on the cluster
`chaoskit cluster up` built, one at a time, each diagnosed by `chaoskit diagnose` and scored as ITBench-AA scores an
agent: a case counts only when every root-cause entity is named, and then by precision (naming a victim or anything
else counts against). No-fault controls score only for naming nothing.

    python bench/peer_problems.py [--only NAME ...] [--k8sgpt PATH] [--json]

Prints per problem its suite, class, chaoskit's named root causes, recall, precision, ITBench-AA score and seconds,
and, with --k8sgpt, what k8sgpt's analyzers flag at the same moment (the objects it names, scored the same way,
less what it flags on the healthy cluster before the first problem: its unused-ConfigMap notes);
then the totals (full recall, mean ITBench-AA, false findings on the controls) beside the published best (ITBench-AA
47 %). Problems not reproduced here are listed with the reason.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the problems live with the e2e tests

from tests.e2e.peers import (  # noqa: E402
    CONTEXT,
    PROBLEMS,
    Problem,
    broken,
    diagnose,
    named_roots,
    score,
    tear_down,
)

PUBLISHED_BEST_AA = 0.47  # ITBench-AA's best agent, as published


def k8sgpt(binary: str) -> tuple[set[str], float]:
    """The objects k8sgpt's analyzers flag (kind/namespace/name, lower-cased as chaoskit names them), and its time."""
    t0 = time.monotonic()
    done = subprocess.run(
        [binary, "analyze", "--kubecontext", CONTEXT, "--output", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    took = time.monotonic() - t0
    try:
        results = json.loads(done.stdout).get("results") or []
    except json.JSONDecodeError:
        return {f"error: {done.stderr.strip()[-120:]}"}, took
    out = set()
    for r in results:
        if all("is not used by any pods" in str(e.get("Text")) for e in r.get("error") or [{}]):
            continue  # its unused-ConfigMap notes: on every namespace, never a cause
        kind = str(r.get("kind", "")).lower()
        name = str(r.get("name", ""))  # namespace/name, or name for cluster-scoped objects
        out.add(f"{kind}/{name}")
    return out, took


def one(p: Problem, k8sgpt_bin: str | None, baseline: set[str]) -> dict[str, Any]:
    try:
        broken([p])
        time.sleep(p.settle_s)
        doc, took = diagnose()
        theirs, their_s = k8sgpt(k8sgpt_bin) if k8sgpt_bin else (set(), 0.0)
        theirs -= baseline  # what it flags on the healthy cluster too (unused ConfigMaps) is not held against it
    finally:
        errors = tear_down(p)
    ours = score(p.entities, named_roots(doc), p.blameless)
    row: dict[str, Any] = {
        "problem": p.name,
        "suite": p.suite,
        "class": p.klass,
        "roots": sorted(p.entities),
        "named": sorted(ours.named),
        "recall": round(ours.recall, 2),
        "precision": round(ours.precision, 2),
        "aa": round(ours.aa, 2),
        "victims_blamed": sorted(ours.victims_blamed),
        "seconds": round(took, 1),
        "status": doc["status"],
        "summary": doc.get("summary", ""),
        "revert_errors": errors,
    }
    if k8sgpt_bin:
        their = score(p.entities, theirs)
        row |= {
            "k8sgpt_named": sorted(theirs),
            "k8sgpt_recall": round(their.recall, 2),
            "k8sgpt_aa": round(their.aa, 2),
            "k8sgpt_seconds": round(their_s, 1),
        }
    return row


def totals(rows: list[dict[str, Any]], who: str = "") -> dict[str, Any]:
    """Full recall, mean ITBench-AA and the controls' findings, of chaoskit's columns or (who="k8sgpt_") k8sgpt's."""
    faults = [r for r in rows if r["class"] != "control"]
    controls = [r for r in rows if r["class"] == "control"]
    return {
        "problems": len(faults),
        "full_recall": round(sum(1 for r in faults if r[f"{who}recall"] == 1.0) / len(faults), 2) if faults else None,
        "mean_aa": round(sum(r[f"{who}aa"] for r in faults) / len(faults), 2) if faults else None,
        "controls": len(controls),
        "control_findings": sum(len(r[f"{who}named"]) for r in controls),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", default=[], help="problem names to run (default: all)")
    ap.add_argument("--k8sgpt", help="a k8sgpt binary: its analyzers' findings at the same moment, scored alike")
    ap.add_argument("--json", action="store_true", help="print the rows and totals as JSON")
    args = ap.parse_args()
    chosen = [p for p in PROBLEMS if not args.only or p.name in args.only]
    rows = []
    baseline = k8sgpt(args.k8sgpt)[0] if args.k8sgpt else set()
    for p in chosen:
        if p.skip:
            continue
        row = one(p, args.k8sgpt, baseline)
        rows.append(row)
        if not args.json:
            theirs = f"  k8sgpt {row['k8sgpt_aa']:.2f} {row['k8sgpt_named']}" if args.k8sgpt else ""
            print(
                f"{p.suite:<9} {p.name:<31} recall {row['recall']:.2f} precision {row['precision']:.2f} "
                f"AA {row['aa']:.2f} {row['seconds']:>5.1f}s  named {row['named']}{theirs}",
                flush=True,
            )
    skipped = [{"problem": p.name, "suite": p.suite, "why": p.skip} for p in chosen if p.skip]
    result = {"rows": rows, "totals": totals(rows), "skipped": skipped, "published_best_aa": PUBLISHED_BEST_AA}
    if args.k8sgpt and rows:
        result["k8sgpt_totals"] = totals(rows, "k8sgpt_")
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for s in skipped:
        print(f"{s['suite']:<9} {s['problem']:<31} not reproduced: {s['why']}")
    t = result["totals"]
    print(
        f"\nchaoskit: {t['problems']} problems, full recall {t['full_recall']}, mean ITBench-AA {t['mean_aa']} "
        f"(published best {PUBLISHED_BEST_AA}); {t['controls']} no-fault controls, {t['control_findings']} findings"
    )
    if "k8sgpt_totals" in result:
        k = result["k8sgpt_totals"]
        print(
            f"k8sgpt:   full recall {k['full_recall']}, mean ITBench-AA {k['mean_aa']}; "
            f"{k['control_findings']} findings on the controls"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
