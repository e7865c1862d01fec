"""A real Prometheus server beside the cluster: Debian's binaries, our scrape config and recording rules.

No container registry is reachable here, so Prometheus cannot run as the usual in-cluster image; Debian ships it
(prometheus + promtool, one package). We take the binaries out of the .deb (`apt-get download` + `dpkg-deb -x`)
into the cache, keyed by the package version, and never install the Debian service. Prometheus runs on the host as
a child process with its data in a work directory and scrapes the kind nodes over the docker network: kube-proxy
over plain HTTP, the kubelet, API server, controller-manager and scheduler over HTTPS with the token of a
ServiceAccount allowed to GET /metrics (namespace chaoskit-monitoring), etcd's metrics listener over HTTP.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from chaoskit.cluster.assets import prometheus_rules
from chaoskit.cluster.cache import Cache
from chaoskit.cluster.kube import Kube, KubeError
from chaoskit.cluster.shell import Runner
from chaoskit.errors import MissingDependency, ToolError

PACKAGE = "prometheus"
NAMESPACE = "chaoskit-monitoring"
SERVICE_ACCOUNT = "prometheus"
CLUSTER_ROLE = "chaoskit-prometheus"
TOKEN_SECONDS = 7 * 24 * 3600  # a token outliving a long soak; `up` asks for a fresh one each time

# Ports of the components on a kind node (kind-config.yaml binds the control-plane ones to 0.0.0.0).
KUBE_PROXY_PORT = 10249
KUBELET_PORT = 10250
APISERVER_PORT = 6443
CONTROLLER_MANAGER_PORT = 10257
SCHEDULER_PORT = 10259
ETCD_METRICS_PORT = 2381


class PrometheusError(ToolError):
    """The Prometheus server did not start, or its HTTP API answered an error."""


# ---------------------------------------------------------------------------------------------------- install
@dataclass(frozen=True)
class Install:
    version: str
    prometheus: Path
    promtool: Path


def candidate_version(runner: Runner) -> str | None:
    """The version apt would install, from `apt-cache policy`; None when apt knows no such package."""
    out = runner.run(["apt-cache", "policy", PACKAGE], check=False).stdout
    for line in out.splitlines():
        key, _, value = line.strip().partition(":")
        if key == "Candidate":
            return None if value.strip() in ("", "(none)") else value.strip()
    return None


def install(runner: Runner, cache: Cache) -> Install:
    """Debian's prometheus and promtool binaries, from the cache or downloaded and unpacked into it (atomically)."""
    if shutil.which("apt-get") is None:
        on_path = shutil.which("prometheus"), shutil.which("promtool")
        if on_path[0] and on_path[1]:
            return Install("path", Path(on_path[0]), Path(on_path[1]))
        raise MissingDependency(
            "Prometheus is not available: chaoskit takes it from Debian's `prometheus` package (apt-get download), "
            "but this host has no apt-get and no prometheus/promtool on PATH"
        )
    version = candidate_version(runner)
    if version is None and os.geteuid() == 0:
        runner.run(["apt-get", "update", "-qq"], env={"DEBIAN_FRONTEND": "noninteractive"}, timeout=300)
        version = candidate_version(runner)
    if version is None:
        raise MissingDependency(
            "Prometheus is not available: apt knows no candidate for the Debian package `prometheus` "
            "(`apt-cache policy prometheus`); run `apt-get update` as root, or add a Debian suite that ships it"
        )
    if (hit := cache.get("prometheus", PACKAGE, version)) is not None:
        return _unpacked(hit, version)
    with cache.entry("prometheus", PACKAGE, version) as out:
        # root's cache dir is closed to apt's sandbox user: download as root instead of warning about it
        sandbox = ["-o", "APT::Sandbox::User=root"] if os.geteuid() == 0 else []
        runner.run(["apt-get", *sandbox, "download", f"{PACKAGE}={version}"], cwd=out, timeout=600)
        debs = sorted(out.glob(f"{PACKAGE}_*.deb"))
        if not debs:
            raise MissingDependency(f"apt-get download {PACKAGE}={version} left no .deb in {out}")
        runner.run(["dpkg-deb", "-x", str(debs[0]), str(out / "root")], timeout=300)
        for deb in debs:
            deb.unlink()
        _unpacked(out, version)
    return _unpacked(cache.path("prometheus", PACKAGE, version), version)


def _unpacked(root: Path, version: str) -> Install:
    found = Install(version, root / "root/usr/bin/prometheus", root / "root/usr/bin/promtool")
    for binary in (found.prometheus, found.promtool):
        if not os.access(binary, os.X_OK):
            raise MissingDependency(f"the Debian package {PACKAGE} {version} holds no executable {binary.name}")
    return found


def check_rules(runner: Runner, tools: Install, path: Path) -> str:
    """`promtool check rules`; CommandError (with promtool's findings) when the file is invalid."""
    return runner.run([str(tools.promtool), "check", "rules", str(path)], timeout=60).output


def check_config(runner: Runner, tools: Install, path: Path) -> str:
    return runner.run([str(tools.promtool), "check", "config", str(path)], timeout=60).output


# ----------------------------------------------------------------------------------------------------- config
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
    for item in kube.get("/api/v1/nodes").get("items", []):
        meta, status = item["metadata"], item.get("status", {})
        ips = [a["address"] for a in status.get("addresses", []) if a.get("type") == "InternalIP"]
        if not ips:
            continue
        labels = meta.get("labels") or {}
        nodes.append(Node(meta["name"], ips[0], "node-role.kubernetes.io/control-plane" in labels))
    return sorted(nodes, key=lambda n: n.name)


def cluster_jobs(nodes: list[Node], exporter: str | None = None) -> tuple[Job, ...]:
    """Every scrape job for a kind cluster's nodes (and chaoskit's exporter at host:port, when given)."""

    def each(ns: list[Node], port: int) -> tuple[Target, ...]:
        return tuple(Target(f"{n.ip}:{port}", (("node", n.name),)) for n in ns)

    planes = [n for n in nodes if n.control_plane]
    jobs = [
        Job("kube-proxy", each(nodes, KUBE_PROXY_PORT)),
        Job("kubelet", each(nodes, KUBELET_PORT), "https", authorized=True, verify=False),
        Job("cadvisor", each(nodes, KUBELET_PORT), "https", "/metrics/cadvisor", authorized=True, verify=False),
        Job("apiserver", each(planes, APISERVER_PORT), "https", authorized=True),
        Job("kube-controller-manager", each(planes, CONTROLLER_MANAGER_PORT), "https", authorized=True, verify=False),
        Job("kube-scheduler", each(planes, SCHEDULER_PORT), "https", authorized=True, verify=False),
        Job("etcd", each(planes, ETCD_METRICS_PORT)),
    ]
    if exporter:
        jobs.insert(0, Job("chaoskit", (Target(exporter),)))
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
    out.write("# Rendered by chaoskit/cluster/prometheus.py; every `chaoskit metrics prometheus up` renders it anew.\n")
    yaml.dump(doc, out)
    return out.getvalue()


# ----------------------------------------------------------------------------------- credentials in the cluster
def monitoring_objects() -> list[dict[str, Any]]:
    """The ServiceAccount Prometheus scrapes as, and a ClusterRole allowing exactly GET of metrics."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": SERVICE_ACCOUNT, "namespace": NAMESPACE}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": CLUSTER_ROLE},
            "rules": [
                # the API server, scheduler and controller-manager authorize /metrics as a non-resource URL
                {"nonResourceURLs": ["/metrics", "/metrics/*"], "verbs": ["get"]},
                # the kubelet maps /metrics and /metrics/cadvisor to the nodes/metrics subresource
                {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": CLUSTER_ROLE},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CLUSTER_ROLE},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}],
        },
    ]


_RBAC = "/apis/rbac.authorization.k8s.io/v1"


def ensure_monitoring(kube: Kube) -> str:
    """Create (or update) the monitoring ServiceAccount and its role; return a fresh token for it."""
    for obj in monitoring_objects():
        if obj["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            collection = f"{_RBAC}/{obj['kind'].lower()}s"
            try:
                kube.create(collection, obj)
            except KubeError as exc:
                if "HTTP 409" not in str(exc):
                    raise
                kube.patch(f"{collection}/{obj['metadata']['name']}", obj)  # merge patch: the rules list is replaced
        else:
            kube.apply(obj)
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"expirationSeconds": TOKEN_SECONDS}}  # fmt: skip
    answer = kube.create(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}/token", request)
    return str(answer["status"]["token"])


def cluster_ca(kube: Kube) -> str:
    """The cluster CA (PEM) that kube-controller-manager publishes to every namespace."""
    return str(kube.get("/api/v1/namespaces/kube-system/configmaps/kube-root-ca.crt")["data"]["ca.crt"])


def prepare(kube: Kube, workdir: Path, exporter: str | None, rules: Path | None = None) -> Config:
    """Credentials and config files for scraping this cluster, written under workdir (token file mode 0600)."""
    workdir.mkdir(parents=True, exist_ok=True)
    token_file, ca_file = workdir / "token", workdir / "ca.crt"
    _write_private(token_file, ensure_monitoring(kube))
    ca_file.write_text(cluster_ca(kube))
    rules = rules if rules is not None else prometheus_rules()
    config = Config(cluster_jobs(cluster_nodes(kube), exporter), (rules,) if rules else (), token_file, ca_file)
    (workdir / "prometheus.yml").write_text(render(config))
    return config


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


# ----------------------------------------------------------------------------------------------------- server
def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A running Prometheus: its URL, process id and work directory (config, data, log, pid file)."""

    url: str
    pid: int
    workdir: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)  # None when adopted from a pid file

    @property
    def log(self) -> Path:
        return self.workdir / "prometheus.log"

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as resp:
                return int(resp.status) == 200
        except (urllib.error.URLError, OSError):
            return False

    def wait_ready(self, timeout: float = 60.0) -> float:
        """Seconds until /-/ready answered 200; PrometheusError with the log's tail if it exits or times out."""
        start = time.monotonic()
        while not self.ready():
            if not self.alive():
                raise PrometheusError(f"prometheus exited before becoming ready; log {self.log}:\n{self._tail()}")
            if time.monotonic() - start > timeout:
                raise PrometheusError(f"prometheus not ready after {timeout:.0f}s; log {self.log}:\n{self._tail()}")
            time.sleep(0.2)
        return time.monotonic() - start

    def api(self, path: str, **params: str) -> Any:
        url = f"{self.url}/api/v1/{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:500]
            raise PrometheusError(f"GET {url}: HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise PrometheusError(f"GET {url}: {exc}") from exc
        if body.get("status") != "success":
            raise PrometheusError(f"GET {url}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant PromQL query: the vector's elements as {"metric": {labels}, "value": [t, "v"]}."""
        data = self.api("query", query=expr)
        result = data["result"]
        return result if isinstance(result, list) else [{"metric": {}, "value": result}]

    def targets(self) -> list[dict[str, Any]]:
        return list(self.api("targets")["activeTargets"])

    def alive(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return _is_prometheus(self.pid)

    def stop(self, timeout: float = 15.0) -> None:
        if not self.alive():
            return
        os.kill(self.pid, signal.SIGTERM)  # prometheus flushes its head block and exits on TERM
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)
        if self.process is not None:
            self.process.wait()
        (self.workdir / "prometheus.pid").unlink(missing_ok=True)

    def _tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def start(tools: Install, workdir: Path, port: int | None = None, address: str = "127.0.0.1",
          *, detach: bool = False, retention: str = "1d") -> Server:  # fmt: skip
    """Start prometheus on workdir/prometheus.yml with its TSDB in workdir/data; detach outlives this process."""
    port = port or free_port(address)
    data = workdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    argv = [
        str(tools.prometheus),
        f"--config.file={workdir / 'prometheus.yml'}",
        f"--storage.tsdb.path={data}",
        f"--storage.tsdb.retention.time={retention}",
        f"--web.listen-address={address}:{port}",
    ]
    with (workdir / "prometheus.log").open("ab") as log:
        proc = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir, start_new_session=detach
        )
    host = "127.0.0.1" if address in ("0.0.0.0", "") else address
    server = Server(f"http://{host}:{port}", proc.pid, workdir, proc)
    (workdir / "prometheus.pid").write_text(f"{proc.pid}\n")
    (workdir / "url").write_text(f"{server.url}\n")
    return server


def adopt(workdir: Path) -> Server | None:
    """The server a detached `start` left in workdir (pid file and config), if it still runs."""
    pid_file, url_file = workdir / "prometheus.pid", workdir / "url"
    if not pid_file.exists():
        return None
    pid = int(pid_file.read_text().strip() or 0)
    if not pid or not _is_prometheus(pid):
        pid_file.unlink(missing_ok=True)  # a stale pid: that process is gone (or the pid was reused)
        return None
    return Server(url_file.read_text().strip() if url_file.exists() else "", pid, workdir)


def _is_prometheus(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    if not cmdline or not cmdline[0].endswith(b"prometheus"):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie child is dead to us
