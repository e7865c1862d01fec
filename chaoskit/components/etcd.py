"""etcd: its process and static pod, its client port (the API server's) and its plain-HTTP health and metrics."""

from __future__ import annotations

import re

from chaoskit.components.common import local_url, manifest

PROCESS = "etcd"
MANIFEST = manifest(PROCESS)
CLIENT_PORT = "2379"  # TLS, the API server's; a string: it is only ever written into commands and rules
METRICS_PORT = 2381  # kind-config.yaml binds /health, /readyz and /metrics here over plain HTTP
METRICS_BASE = local_url(METRICS_PORT, "", "http")


def alarm(health: str) -> str:
    """The alarm etcd's /health names in its reason ({"health":"false","reason":"ALARM NOSPACE"}), or ""."""
    m = re.search(r'"reason"\s*:\s*"ALARM (\w+)', health)
    return m.group(1) if m else ""
