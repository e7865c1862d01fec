"""The ChaosExperiment resource (deploy/chaoskit/crd.yaml): the words the operator, the CLI and the installer share."""

from __future__ import annotations

from typing import Literal

Phase = Literal["Running", "Passed", "Deviated", "Aborted", "Error", "Interrupted", "Invalid"]
# a run's verdict as the experiment's phase
PHASES: dict[str, Phase] = {
    "passed": "Passed",
    "deviated": "Deviated",
    "aborted": "Aborted",
    "error": "Error",
    "interrupted": "Interrupted",
}
FINAL: frozenset[str] = frozenset({*PHASES.values(), "Invalid"})  # nothing of the run is left in place
FINALIZER = "chaoskit.dev/revert"  # held while a run may have faults in place: deletion waits for the revert
