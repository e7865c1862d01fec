"""A real Prometheus server beside the cluster: Debian's binaries, our scrape config and recording rules.

`install` takes the binaries out of Debian's package into the cache; `rbac` makes the ServiceAccount it scrapes as;
`config` renders prometheus.yml for the cluster's nodes; `server` runs it on the host and asks its HTTP API.
"""

from chaoskit.cluster.prometheus.config import (
    DIAGNOSIS_JOB,
    Config,
    Job,
    Node,
    Target,
    cluster_ca,
    cluster_jobs,
    cluster_nodes,
    prepare,
    render,
)
from chaoskit.cluster.prometheus.install import PACKAGE, Install, candidate_version, check_config, check_rules, install
from chaoskit.cluster.prometheus.rbac import (
    CLUSTER_ROLE,
    NAMESPACE,
    SERVICE_ACCOUNT,
    TOKEN_SECONDS,
    ensure_monitoring,
    monitoring_objects,
)
from chaoskit.cluster.prometheus.server import PrometheusError, Server, adopt, default_dir, free_port, start

__all__ = [
    "CLUSTER_ROLE",
    "DIAGNOSIS_JOB",
    "NAMESPACE",
    "PACKAGE",
    "SERVICE_ACCOUNT",
    "TOKEN_SECONDS",
    "Config",
    "Install",
    "Job",
    "Node",
    "PrometheusError",
    "Server",
    "Target",
    "adopt",
    "candidate_version",
    "check_config",
    "check_rules",
    "cluster_ca",
    "cluster_jobs",
    "cluster_nodes",
    "default_dir",
    "ensure_monitoring",
    "free_port",
    "install",
    "monitoring_objects",
    "prepare",
    "render",
    "start",
]
