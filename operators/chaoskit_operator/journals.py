"""A run's journal kept in the cluster too: a ConfigMap beside its ChaosExperiment, owned by it.

The operator's pod writes journals to its own disk, which a deleted or rescheduled pod loses; the copy in the
cluster is what a new operator pod reverts from. It is written by a thread of its own, the latest content each
time, so a run never waits on the API server (which its fault may be breaking): while the API does not answer the
copy lags, and the dead-man switches on the nodes heal whatever it missed.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from chaoskit.journal import Journal
from chaoskit.seams.kube import Kube, KubeError
from chaoskit_operator.experiment import GROUP, VERSION

KEY = "journal.jsonl"
RETRY_S = 2.0


def configmap_name(name: str, uid: str) -> str:
    return f"chaoskit-journal-{name}-{uid[:8]}"[:253]


def configmap(namespace: str, name: str, uid: str, text: str) -> dict[str, Any]:
    owner = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ChaosExperiment", "name": name, "uid": uid}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": configmap_name(name, uid),
            "namespace": namespace,
            "ownerReferences": [owner],
            "labels": {"app.kubernetes.io/part-of": "chaoskit", "chaoskit.dev/experiment": name},
        },
        "data": {KEY: text},
    }


class Mirror:
    """Copies a journal into its ConfigMap after every entry, off the run's thread, retrying until it lands."""

    def __init__(self, kube: Kube, namespace: str, name: str, uid: str) -> None:
        self.kube, self.namespace, self.name, self.uid = kube.bounded((3.0, 5.0)), namespace, name, uid
        self.dirty, self.done = threading.Event(), threading.Event()
        self.journal: Journal | None = None
        self.give_up_at = float("inf")
        self.thread = threading.Thread(target=self._loop, name=f"journal-{name}", daemon=True)
        self.thread.start()

    def __call__(self, journal: Journal) -> None:
        self.journal = journal
        self.dirty.set()

    def _loop(self) -> None:
        while True:
            if not self.dirty.wait(0.5):
                if self.done.is_set():
                    return
                continue
            self.dirty.clear()
            if self._write():
                continue
            self.dirty.set()  # the next try carries whatever was appended meanwhile
            if self.done.is_set() and time.monotonic() > self.give_up_at:
                return  # what did not land is the switches' to heal
            time.sleep(0.5 if self.done.is_set() else RETRY_S)

    def _write(self) -> bool:
        if self.journal is None:
            return True
        try:
            text = self.journal.path.read_text(encoding="utf-8")
            self.kube.apply(configmap(self.namespace, self.name, self.uid, text))
        except (KubeError, OSError):
            return False
        return True

    def close(self, wait_s: float = 10.0) -> None:
        """Flush what is pending, trying for up to `wait_s`, and stop."""
        self.give_up_at = time.monotonic() + wait_s
        self.done.set()
        self.thread.join(wait_s + 1)


def restore(kube: Kube, namespace: str, name: str, uid: str, dest: Path) -> bool:
    """Write the cluster's copy of a run's journal to `dest`; False when there is none."""
    try:
        found = kube.find(f"/api/v1/namespaces/{namespace}/configmaps/{configmap_name(name, uid)}")
    except KubeError:
        return False
    if not found or KEY not in (found.get("data") or {}):
        return False
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(found["data"][KEY], encoding="utf-8")
    return True
