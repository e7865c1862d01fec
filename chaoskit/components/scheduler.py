"""kube-scheduler: its process and static pod, where it answers, and its leader lease."""

from __future__ import annotations

from chaoskit.components.common import leader_lease, local_url, manifest

PROCESS = "kube-scheduler"
MANIFEST = manifest(PROCESS)
PORT = 10259
HEALTHZ = local_url(PORT, "/healthz")
METRICS_URL = local_url(PORT, "/metrics")
LEASE = leader_lease(PROCESS)
