"""Benchmark: the whole shipped catalog through `chaoskit run playbooks/`, as a user's CI gate runs it.

    python bench/catalog.py [--parallel 3] [--playbooks playbooks/] [--json]

Runs the real CLI once against the cluster `chaoskit cluster up` built and prints: the wall time of the whole suite
(the figure to keep under 20 minutes on a 2-core host), its verdict and exit code, how much ran at the same time (the
sum of the playbooks' own times over the wall time), the time spent with only what runs alone, and per playbook its
radius, when it started and ended, its verdict, and per step the effect, naming and recovery times, its fact check and
what the fact check's two controls (the effect check before the injection, the recovery check while the fault held)
cost it, with their total over the suite.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

from chaoskit.model.moments import epoch


def run_catalog(playbooks: str, parallel: int) -> tuple[dict[str, Any], float, int]:
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "chaoskit", "run", playbooks, "--parallel", str(parallel), "-o", "json"],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    return json.loads(done.stdout), time.monotonic() - t0, done.returncode


def figures(record: dict[str, Any], wall: float, returncode: int) -> dict[str, Any]:
    runs = record["runs"]
    own = sum(r["finished_s"] - r["started_s"] for r in runs)
    alone = sum(r["finished_s"] - r["started_s"] for r in runs if r["radius"] == "cluster")
    return {
        "wall_s": round(wall, 1),
        "suite_s": round((epoch(record["finished_at"]) or 0.0) - (epoch(record["started_at"]) or 0.0), 1),
        "verdict": record["verdict"],
        "exit_code": returncode,
        "playbooks": len(runs),
        "overlap": round(own / wall, 2) if wall else None,
        "alone_s": round(alone, 1),
        "runs": [
            {
                "playbook": r["playbook"],
                "radius": r["radius"],
                "started_s": r["started_s"],
                "took_s": round(r["finished_s"] - r["started_s"], 1),
                "verdict": r["verdict"],
                "steps": [
                    {
                        "fault": s["fault"],
                        "node": s["node"],
                        "effect_s": s["effect_s"],
                        "named_s": s.get("named_s"),
                        "recovery_s": s["recovery_s"],
                        "fact_check": (s.get("fact_check") or {}).get("verdict"),
                        "controls_s": (s.get("fact_check") or {}).get("seconds"),
                    }
                    for s in r["steps"]
                ],
            }
            for r in runs
        ],
        "controls_s": round(
            sum((s.get("fact_check") or {}).get("seconds") or 0.0 for r in runs for s in r["steps"]), 1
        ),
    }


def _s(v: float | None) -> str:
    return "—" if v is None else f"{v:.1f}s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--playbooks", default="playbooks/")
    ap.add_argument("--parallel", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    out = figures(*run_catalog(args.playbooks, args.parallel))
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(
        f"catalog: {out['playbooks']} playbooks in {out['wall_s'] / 60:.1f} min wall ({out['wall_s']}s; suite "
        f"{out['suite_s']}s), verdict {out['verdict']} (exit {out['exit_code']}); overlap {out['overlap']}x; "
        f"{out['alone_s']:.0f}s running alone; the fact checks' controls {out['controls_s']}s in all"
    )
    for r in out["runs"]:
        print(
            f"  {r['playbook']:38s} {r['radius']:34s} start {r['started_s']:6.0f}s took {r['took_s']:5.0f}s "
            f"{r['verdict']}"
        )
        for s in r["steps"]:
            print(
                f"      {s['fault']:36s} on {s['node']:24s} effect {_s(s['effect_s'])}, named "
                f"{_s(s['named_s'])}, healthy {_s(s['recovery_s'])} after the revert; fact check "
                f"{s['fact_check']}, its controls {_s(s['controls_s'])}"
            )


if __name__ == "__main__":
    main()
