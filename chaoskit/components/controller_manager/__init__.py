"""kube-controller-manager: its process and static pod, where it answers, and its leader lease (here); the controllers
it runs, their work queues and RBAC (controllers.py); and whether a work queue is worked (workqueues.py). Its faults,
its diagnoser and what measures it read these, so that each rule is written once."""

from __future__ import annotations

from chaoskit.components.common import leader_lease, local_url, manifest, pid_command

PROCESS = "kube-controller-manager"
MANIFEST = manifest(PROCESS)
PORT = 10257
HEALTHZ = local_url(PORT, "/healthz")
METRICS_URL = local_url(PORT, "/metrics")
LEASE_NAME = PROCESS  # its leader lease is named after it
LEASE = leader_lease(LEASE_NAME)
# the running process's command line (its flags), read inside the node
CMDLINE = f"{pid_command(PROCESS)} && tr '\\0' ' ' < /proc/$pid/cmdline"
