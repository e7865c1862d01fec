"""What the kubelet diagnosis reads, and its thresholds: the evidence collected once per look, and its journal's
recent lines."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import Field

from chaoskit.components import kubelet
from chaoskit.diagnosers.kit.common import (
    HttpAnswer,
    condition_of,
    http_command,
    matching,
)
from chaoskit.diagnosers.kit.sources import Fetched, Section
from chaoskit.model.params import FaultParams
from chaoskit.seams.scrape import Metrics

KUBELET_DIR = kubelet.DIR
CLIENT_PEM = kubelet.CLIENT_PEM
PRESSURES = ("DiskPressure", "MemoryPressure", "PIDPressure")
JOURNAL = kubelet.JOURNAL
# The API server as kubelet dials it (kubelet.conf's server), asked from inside the node: whether the node reaches it.
API_REACH = (
    "server=$(sed -n 's/^ *server: *//p' /etc/kubernetes/kubelet.conf | head -n 1); echo \"server $server\"; "
    + http_command("$server/livez", max_time=3).replace("'$server/livez'", '"$server/livez"')
)
# What kubelet logs when its requests to the API server get no answer (lease, node status, watches).
API_ERRORS = (
    "failed to update lease",
    "error updating node status",
    "client connection lost",
    "dial tcp",
    "context deadline exceeded",
    "client.timeout",
)
_JOURNAL_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}) ")


class KubeletParams(FaultParams):
    heartbeat_grace: float = Field(default=0.0, description="Seconds past the node lease's duration before stale.")
    pleg_warning: float = Field(default=30.0, description="Seconds since PLEG was last active: warning.")
    pleg_critical: float = Field(default=180.0, description="Seconds since PLEG was last active: critical (kubelet's).")
    disk_warning: float = Field(default=85.0, description="Percent used of kubelet's filesystem: warning.")
    cert_warning_days: float = Field(default=7.0, description="Client certificate expiring sooner: warning.")
    recent: float = Field(default=120.0, description="Seconds of journal that count as happening now.")


@dataclass(frozen=True)
class KubeletEvidence:
    node: str
    collected_at: float
    service: str  # systemctl is-active: active, activating, inactive, failed
    restarts: int | None  # systemd's NRestarts
    unread: str  # why systemctl's look did not finish (a loaded node cut it off): no verdict on the service then
    healthz: HttpAnswer  # kubelet.HEALTHZ inside the node
    healthz_verbose: HttpAnswer  # its authenticated /healthz?verbose, from the control plane (syncloop)
    metrics: Metrics  # kubelet's /metrics (PLEG)
    client_not_after: float | None
    disk_used_percent: float | None
    journal: str
    node_obj: Fetched
    lease: Fetched
    api_reach: Section | None = None  # API_REACH's output in the node: `server <url>`, then curl's answer
    pods: Fetched | None = None  # the pods bound to the node: which wait out their toleration when it is lost
    eviction_hard: dict[str, str] = field(default_factory=dict)  # its config file's evictionHard thresholds


def recent(p: KubeletParams, ev: KubeletEvidence, *needles: str, after: float | None = None) -> tuple[str, ...]:
    """Journal lines from the last `recent` seconds (and after `after`) that contain one of `needles`."""
    lines = []
    for line in ev.journal.splitlines():
        m = _JOURNAL_TIME.match(line)
        when = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S%z").timestamp() if m else None
        if when is not None and (ev.collected_at - when > p.recent or (after is not None and when < after)):
            continue
        lines.append(line)
    return matching(lines, *needles)[-8:]


node_condition = condition_of  # a Node's condition, as the node-side judgements name it


def node_conditions(node: dict[str, Any]) -> tuple[str, ...]:
    return tuple(
        f"{c.get('type')}={c.get('status')} {c.get('reason', '')}: {c.get('message', '')}".strip()
        for c in node.get("status", {}).get("conditions") or []
    )


def used_percent(df_line: str) -> float | None:
    fields = df_line.split()
    if len(fields) >= 5 and fields[4].endswith("%") and fields[4][:-1].isdigit():
        return float(fields[4][:-1])
    return None
