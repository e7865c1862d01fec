"""The node lifecycle controller (in the controller manager): when it calls a node lost, and when it evicts the pods
of a lost node."""

from __future__ import annotations

import re
from typing import Any

UNREACHABLE = "node.kubernetes.io/unreachable"  # its taint on a node it has not heard from
NOT_READY = "node.kubernetes.io/not-ready"  # its taint on a node whose kubelet says it is not ready
DEFAULT_TOLERATION = 300  # what the DefaultTolerationSeconds admission plugin gives a pod that names none
GRACE_FLAG = "--node-monitor-grace-period"
DEFAULT_GRACE = 50.0  # the flag's default since Kubernetes v1.32 (40 s before)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def toleration_of(pod: dict[str, Any], taint: str = UNREACHABLE) -> float | None:
    """Seconds the pod stays bound to a node with `taint` (NoExecute); None when it tolerates it for ever."""
    for t in pod.get("spec", {}).get("tolerations") or []:
        key_matches = t.get("key") == taint or (not t.get("key") and t.get("operator") == "Exists")
        if key_matches and t.get("effect") in (None, "", "NoExecute"):
            seconds = t.get("tolerationSeconds")
            return None if seconds is None else float(seconds)
    return float(DEFAULT_TOLERATION)  # the admission plugin adds it to every pod that names none


def go_duration(text: str) -> float | None:
    """A Go duration ("30s", "1m0s", "500ms") in seconds; None when it is not one."""
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * scale[u] for n, u in parts)


def grace_period(command: list[str]) -> float:
    """The node-monitor grace period the controller manager runs with, from its command line."""
    for arg in command:
        if arg.startswith(f"{GRACE_FLAG}="):
            seconds = go_duration(arg.split("=", 1)[1])
            if seconds is not None:
                return seconds
    return DEFAULT_GRACE
