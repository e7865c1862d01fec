"""prometheus.yml for a kind cluster: kube-proxy over plain HTTP, the kubelet, API server, controller-manager and
scheduler over HTTPS with the monitoring ServiceAccount's token, etcd's metrics listener over HTTP.

Prometheus runs on the host and scrapes the kind nodes over the docker network, at each node's InternalIP.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from chaoskit.cluster.assets import prometheus_rules
from chaoskit.cluster.prometheus.rbac import ensure_monitoring
from chaoskit.components import apiserver, controller_manager, etcd, kube_proxy, kubelet, scheduler
from chaoskit.model.kwok import REAL_NODES_SELECTOR
from chaoskit.seams.kube import Kube


@dataclass(frozen=True)
class Target:
    address: str  # host:port
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Job:
    name: str
    targets: tuple[Target, ...]
    scheme: str = "http"
    metrics_path: str = "/metrics"
    authorized: bool = False  # send the ServiceAccount token
    verify: bool = True  # kubelet, scheduler and controller-manager serve self-signed certs nobody can verify


@dataclass(frozen=True)
class Config:
    jobs: tuple[Job, ...]
    rule_files: tuple[Path, ...] = ()
    token_file: Path | None = None
    ca_file: Path | None = None  # the cluster CA: verifies the API server
    scrape_interval: float = 5.0  # a rule-sync lag lives seconds: the default 1 m would miss it
    evaluation_interval: float = 5.0


@dataclass(frozen=True)
class Node:
    name: str
    ip: str
    control_plane: bool


def cluster_nodes(kube: Kube) -> list[Node]:
    nodes = []
    # a simulated node has no kubelet, kube-proxy or node agent to scrape
    for item in kube.get("/api/v1/nodes", labelSelector=REAL_NODES_SELECTOR).get("items", []):
        meta, status = item["metadata"], item.get("status", {})
        ips = [a["address"] for a in status.get("addresses", []) if a.get("type") == "InternalIP"]
        if not ips:
            continue
        labels = meta.get("labels") or {}
        nodes.append(Node(meta["name"], ips[0], "node-role.kubernetes.io/control-plane" in labels))
    return sorted(nodes, key=lambda n: n.name)


OPERATOR_SERVICE = "/api/v1/namespaces/chaoskit-system/services/chaoskit-operator-metrics"


def operator_node_port(kube: Kube) -> int | None:
    """The NodePort of the installed operator's metrics Service (`chaoskit install`), if there is one."""
    svc = kube.find(OPERATOR_SERVICE)
    ports = [p.get("nodePort") for p in ((svc or {}).get("spec", {}).get("ports") or []) if p.get("nodePort")]
    return int(ports[0]) if ports else None


DIAGNOSIS_JOB = "chaoskit-diagnosis"  # the job the diagnosis alerts' `up` reads


def cluster_jobs(
    nodes: list[Node], exporter: str | None = None, operator_port: int | None = None, diagnosis: str | None = None
) -> tuple[Job, ...]:
    """Every scrape job for a kind cluster's nodes (and chaoskit's exporter at host:port, when given; `chaoskit
    diagnose --serve` at host:port, when given; the installed operator through its Service's NodePort on the first
    node, when there is one)."""

    def each(ns: list[Node], port: int) -> tuple[Target, ...]:
        return tuple(Target(f"{n.ip}:{port}", (("node", n.name),)) for n in ns)

    planes = [n for n in nodes if n.control_plane]
    jobs = [
        Job("kube-proxy", each(nodes, kube_proxy.METRICS_PORT)),
        Job("kubelet", each(nodes, kubelet.PORT), "https", authorized=True, verify=False),
        Job("cadvisor", each(nodes, kubelet.PORT), "https", "/metrics/cadvisor", authorized=True, verify=False),
        Job("apiserver", each(planes, apiserver.PORT), "https", authorized=True),
        Job("kube-controller-manager", each(planes, controller_manager.PORT), "https", authorized=True, verify=False),
        Job("kube-scheduler", each(planes, scheduler.PORT), "https", authorized=True, verify=False),
        Job("etcd", each(planes, etcd.METRICS_PORT)),
    ]
    if exporter:
        jobs.insert(0, Job("chaoskit", (Target(exporter),)))
    if diagnosis:  # opt-in: with nothing serving there, the not-looking alert would fire for ever
        jobs.insert(0, Job(DIAGNOSIS_JOB, (Target(diagnosis),)))
    if operator_port and nodes:
        jobs.insert(0, Job("chaoskit-operator", (Target(f"{nodes[0].ip}:{operator_port}"),)))
    return tuple(jobs)


def render(config: Config) -> str:
    """prometheus.yml for `config`."""
    scrape_configs = []
    for job in config.jobs:
        sc: dict[str, Any] = {
            "job_name": job.name,
            "scheme": job.scheme,
            "metrics_path": job.metrics_path,
            "static_configs": [
                {"targets": [t.address], **({"labels": dict(t.labels)} if t.labels else {})} for t in job.targets
            ],
        }
        if job.authorized and config.token_file is not None:
            sc["authorization"] = {"type": "Bearer", "credentials_file": str(config.token_file)}
        if job.scheme == "https":
            tls: dict[str, Any] = {"insecure_skip_verify": not job.verify}
            if job.verify and config.ca_file is not None:
                tls["ca_file"] = str(config.ca_file)
            sc["tls_config"] = tls
        scrape_configs.append(sc)
    doc = {
        "global": {
            "scrape_interval": f"{config.scrape_interval:g}s",
            "scrape_timeout": f"{min(config.scrape_interval, 10.0):g}s",
            "evaluation_interval": f"{config.evaluation_interval:g}s",
        },
        "rule_files": [str(p) for p in config.rule_files],
        "scrape_configs": scrape_configs,
    }
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096
    out = io.StringIO()
    out.write("# Rendered by chaoskit (cluster/prometheus/config.py) anew on every `chaoskit metrics prometheus up`.\n")
    yaml.dump(doc, out)
    return out.getvalue()


def cluster_ca(kube: Kube) -> str:
    """The cluster CA (PEM) that kube-controller-manager publishes to every namespace."""
    return str(kube.get("/api/v1/namespaces/kube-system/configmaps/kube-root-ca.crt")["data"]["ca.crt"])


def prepare(
    kube: Kube, workdir: Path, exporter: str | None, rules: Path | None = None, diagnosis: str | None = None
) -> Config:
    """Credentials and config files for scraping this cluster, written under workdir (token file mode 0600)."""
    workdir.mkdir(parents=True, exist_ok=True)
    token_file, ca_file = workdir / "token", workdir / "ca.crt"
    _write_private(token_file, ensure_monitoring(kube))
    ca_file.write_text(cluster_ca(kube))
    rules = rules if rules is not None else prometheus_rules()
    jobs = cluster_jobs(cluster_nodes(kube), exporter, operator_node_port(kube), diagnosis)
    config = Config(jobs, (rules,) if rules else (), token_file, ca_file)
    (workdir / "prometheus.yml").write_text(render(config))
    return config


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
