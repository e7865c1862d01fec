"""`chaoskit run --via-operator`: each playbook submitted as a ChaosExperiment, followed to its verdict.

The run then happens where the operator runs, inside the cluster through the node agents, on the same engine as
`chaoskit run`; this side prints the run's events as they come and exits with the run's exit code.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from chaoskit.cluster.experiments import FINAL
from chaoskit.errors import EXIT_INTERRUPTED, ToolError
from chaoskit.figures import seconds
from chaoskit.progress import Progress
from chaoskit.seams.kube import Kube, KubeError

GROUP_VERSION = "chaoskit.dev/v1alpha1"
EXIT = {"Passed": 0, "Deviated": 1, "Aborted": 4, "Error": 4, "Interrupted": EXIT_INTERRUPTED, "Invalid": 3}


def experiment(file: Path, namespace: str) -> dict[str, Any]:
    """The playbook as a ChaosExperiment: its spec as written, a fresh name after the playbook's."""
    doc = YAML(typ="safe").load(file.read_text())
    playbook = doc["metadata"]["name"]
    name = f"{playbook}-{uuid.uuid4().hex[:5]}"[:63]
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "ChaosExperiment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"chaoskit.dev/playbook": playbook}},
        "spec": doc["spec"],
    }


def follow(kube: Kube, exp: dict[str, Any], progress: Progress, timeout: float = 3600) -> dict[str, Any]:
    """Create the experiment, relay its events, and return its final status (interrupted: deleted, so reverted)."""
    ns, name = exp["metadata"]["namespace"], exp["metadata"]["name"]
    path = f"/apis/{GROUP_VERSION}/namespaces/{ns}/chaosexperiments/{name}"
    kube.create(f"/apis/{GROUP_VERSION}/namespaces/{ns}/chaosexperiments", exp)
    progress.info(f"submitted ChaosExperiment {ns}/{name}")
    seen: set[str] = set()
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            try:
                events = kube.get(f"/api/v1/namespaces/{ns}/events", fieldSelector=f"involvedObject.name={name}")
                for e in sorted(
                    events.get("items", []), key=lambda e: e.get("metadata", {}).get("creationTimestamp", "")
                ):
                    uid = e["metadata"]["uid"]
                    if uid not in seen:
                        seen.add(uid)
                        progress.info(f"{name}: {e.get('message', '')}")
                status = (kube.find(path) or {}).get("status") or {}
            except KubeError:
                status = {}  # the API server may be what the experiment breaks: keep following
            if status.get("phase") in FINAL:
                return dict(status)
            time.sleep(1)
    except KeyboardInterrupt:
        progress.info(f"interrupted: deleting {name}; the operator reverts its faults before it goes")
        kube.delete(path)
        raise
    raise ToolError(f"ChaosExperiment {ns}/{name} did not finish within {seconds(timeout)}")


def exit_code(status: dict[str, Any]) -> int:
    return int(status.get("exitCode", EXIT.get(status.get("phase", ""), 4)))
