"""Benchmark: where the e2e suite's time goes, from the figures the last e2e session wrote (`.e2e-times.json`, by
tests/e2e/timing.py at the end of `make e2e` or `.ci/run`).

    python bench/e2e_time.py [FILE ...] [--markdown]

Prints, for each session given (default: the last one): its wall time against the 25-minute e2e budget, the sum of
its tests' own times and how many ran at once, every file's summed and spanned time, the time tests waited for
another test's radius, the time spent holding the whole cluster (what runs alone: the floor of any overlap), and the
ten slowest tests split into setup, chaoskit's own waits (effect, hold, revert and recovery, diagnosis) and the rest.
With several files (before and after a change) their headline figures side by side.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

PHASES = ("effect wait", "hold", "revert and recovery wait", "diagnosis")
BUDGET_S = 25 * 60


def wall(s: dict[str, Any]) -> float:
    """From the first test's start to the last one's end (older files counted the wait for another session's lock)."""
    tests = [t for t in s["slowest"] if t.get("start")]
    return max(t["stop"] for t in tests) - min(t["start"] for t in tests) if tests else s["wall_s"]


def headline(s: dict[str, Any]) -> dict[str, float]:
    s = {**s, "wall_s": wall(s)}
    tests = s["slowest"]
    alone = sum(t["wall_s"] for t in tests if "breaks the cluster" in t.get("radius", ""))
    waited = sum(min(t["wall_s"], sum(t.get(p, 0.0) for p in PHASES)) for t in tests)
    return {
        "wall_min": s["wall_s"] / 60,
        "tests": s["tests"],
        "sum_min": s["sum_of_tests_s"] / 60,
        "at_once": s["sum_of_tests_s"] / s["wall_s"] if s["wall_s"] else 0.0,
        "alone_min": alone / 60,
        "chaoskit_waits_share": waited / s["sum_of_tests_s"] if s["sum_of_tests_s"] else 0.0,  # each capped at its wall
        "waited_for_radius_min": sum(t.get("waited_for_radius_s", 0.0) for t in tests) / 60,
    }


def markdown(s: dict[str, Any], name: str) -> str:
    h = headline(s)
    out = [
        f"## {name}",
        "",
        f"- wall {h['wall_min']:.1f} min of the {BUDGET_S // 60}-minute e2e budget; {h['tests']:.0f} tests whose own "
        f"times sum to {h['sum_min']:.1f} min ({h['at_once']:.2f} at once)",
        f"- holding the whole cluster (runs alone): {h['alone_min']:.1f} min; tests waited "
        f"{h['waited_for_radius_min']:.1f} min in all for another's radius",
        "- chaoskit's own waits summed over every run (runs side by side count each): "
        + ", ".join(f"{p} {v / 60:.1f} min" for p, v in s["waited_s"].items())
        + f"; at least {h['chaoskit_waits_share']:.0%} of the tests' time is waiting on one of them",
        "",
        "| file | tests | sum | span |",
        "|---|--:|--:|--:|",
    ]
    out += [
        f"| {f.removeprefix('tests/e2e/')} | {v['tests']} | {v['sum_s']:.0f} s | {v['span_s']:.0f} s |"
        for f, v in s["files"].items()
    ]
    out += ["", "| ten slowest tests | wall | setup | " + " | ".join(PHASES) + " | rest |", "|---" + "|--:" * 7 + "|"]
    for t in s["slowest"][:10]:
        waits = [t.get(p, 0.0) for p in PHASES]
        rest = max(0.0, t["wall_s"] - t["setup_s"] - sum(waits))
        cells = " | ".join(f"{v:.0f} s" for v in (t["wall_s"], t["setup_s"], *waits, rest))
        out.append(f"| {t['test'].removeprefix('tests/e2e/')[:90]} | {cells} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path, default=[Path(".e2e-times.json")])
    ap.add_argument("--markdown", action="store_true", help="each session as a Markdown section")
    args = ap.parse_args()
    sessions = [(f.name, json.loads(f.read_text())) for f in args.files]
    if args.markdown:
        print("\n\n".join(markdown(s, name) for name, s in sessions))
        return
    for name, s in sessions:
        h = headline(s)
        print(
            f"{name}: wall {h['wall_min']:.1f} min (budget {BUDGET_S // 60}), tests {h['sum_min']:.1f} min "
            f"({h['at_once']:.2f} at once), alone {h['alone_min']:.1f} min, waited for a radius "
            f"{h['waited_for_radius_min']:.1f} min, chaoskit's waits {h['chaoskit_waits_share']:.0%}"
        )


if __name__ == "__main__":
    main()
