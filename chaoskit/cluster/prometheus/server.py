"""The Prometheus server: a child process on the host, its data in a work directory, its HTTP API."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaoskit.cluster.prometheus.install import Install
from chaoskit.errors import ToolError
from chaoskit.figures import seconds
from chaoskit.journal import state_home
from chaoskit.seams.shell import Process, spawn


class PrometheusError(ToolError):
    """The Prometheus server did not start, or its HTTP API answered an error."""


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
    process: Process | None = field(default=None, repr=False)  # None when adopted from a pid file

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
                raise PrometheusError(f"prometheus not ready after {seconds(timeout)}; log {self.log}:\n{self._tail()}")
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


def start(
    tools: Install,
    workdir: Path,
    port: int | None = None,
    address: str = "127.0.0.1",
    *,
    detach: bool = False,
    retention: str = "1d",
) -> Server:
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
    proc = spawn(argv, workdir / "prometheus.log", cwd=workdir, detach=detach)
    host = "127.0.0.1" if address in ("0.0.0.0", "") else address
    server = Server(f"http://{host}:{port}", proc.pid, workdir, proc)
    (workdir / "prometheus.pid").write_text(f"{proc.pid}\n")
    (workdir / "url").write_text(f"{server.url}\n")
    return server


def default_dir() -> Path:
    """Where `chaoskit metrics prometheus up` keeps its server (config, data, pid file, URL)."""
    return state_home() / "prometheus"


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
