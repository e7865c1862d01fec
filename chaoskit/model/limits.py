"""Sanity limits on a playbook: a fault held over 30 minutes, or more than 50 fault steps, is refused as the likely
typo it is ("30h" for "30s", a generated playbook gone wrong) before anything is injected, unless the playbook raises
its own limits in `spec.limits`.

The override is a playbook field rather than a command-line flag (an `--allow-long`) for the reason Chaos Mesh and
Litmus keep a fault's duration in the experiment resource itself (Chaos Mesh's `spec.duration`, Litmus's
`TOTAL_CHAOS_DURATION` in the ChaosEngine): what an experiment may do is reviewed with it, in git, and travels with
it, so `chaoskit validate`, `chaoskit run`, a CI gate and the operator running it as a ChaosExperiment (which has no
command line) all agree on whether it is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chaoskit.model.duration import DurationError, format_duration, parse_duration
from chaoskit.model.paths import Path
from chaoskit.model.rules import Found, fault_steps

DEFAULT_MAX_HOLD = 30 * 60.0  # seconds: longer than any catalog playbook holds, by far
DEFAULT_MAX_STEPS = 50  # fault steps, those of concurrent groups one by one


def _seconds(value: Any) -> float | None:
    try:
        return parse_duration(value)
    except DurationError:
        return None  # the field's own validation reports it


def limit_problems(spec: Mapping[str, Any], at: Path = ()) -> Found:
    """A fault step held longer than `spec.limits.maxHold`, or more fault steps than `spec.limits.maxSteps`; each
    problem names the field that raises the limit."""
    given = spec.get("limits")
    limits: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    max_hold = _seconds(limits.get("maxHold", DEFAULT_MAX_HOLD))
    max_steps = limits.get("maxSteps", DEFAULT_MAX_STEPS)
    steps = list(fault_steps(spec, at))
    found: Found = []
    for path, _, step in steps:
        held = _seconds(step.get("duration"))
        if max_hold and held is not None and held > max_hold:  # a limit of 0s is refused as such, not at each step
            found.append(
                (
                    (*path, "duration"),
                    f"holds its fault {format_duration(held)}, over the {format_duration(max_hold)} limit (a typo?); "
                    f"to hold it this long, raise the limit in the playbook: spec.limits.maxHold: "
                    f"{format_duration(held)}",
                )
            )
    if isinstance(max_steps, int) and not isinstance(max_steps, bool) and 0 < max_steps < len(steps):
        found.append(
            (
                (*at, "steps"),
                f"{len(steps)} fault steps, over the limit of {max_steps}; to run them all, raise the limit in the "
                f"playbook: spec.limits.maxSteps: {len(steps)}",
            )
        )
    return found
