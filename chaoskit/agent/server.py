"""The node agent: a small HTTPS API on a host port that runs commands in the node's own namespaces.

It stands where `docker exec` stands on kind: the far end of the node seam. A DaemonSet runs it privileged with
hostPID and hostNetwork, and every command goes through `nsenter` into PID 1's namespaces, so `systemctl`,
`iptables`, the static-pod manifests and the dead-man switch's timers are the node's own. It is dialled on the
node's address, never through pods/exec: that path runs API server → kubelet → runtime, which are what the faults
break. Only a peer with a client certificate of the install's CA gets past the TLS handshake (see
chaoskit.seams.pki); anything else is refused before a byte of the request is read.

    GET  /v1/ping    {"node": ..., "version": ...}
    POST /v1/run     {"argv": [...], "input": base64 | null, "timeout": seconds | null}
                     -> {"returncode": int, "stdout": str, "stderr": str, "timed_out": bool}
    POST /v1/lines   {"argv": [...]} -> the command's stdout, a line at a time, until it ends or the client goes
                     (then its whole process group is killed)
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from chaoskit import __version__
from chaoskit.seams.agentexec import PORT as PORT  # the CLI's default

HOST_NAMESPACES = ("nsenter", "--target", "1", "--mount", "--uts", "--ipc", "--net", "--pid", "--")
MAX_BODY = 16 << 20  # a request carries an argv and a command's stdin (a manifest, a script): never more


@dataclass(frozen=True)
class TLSFiles:
    """Where a TLS end finds its PEM files (a mounted Secret: ca.crt, tls.crt, tls.key)."""

    dir: Path

    @property
    def ca(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def cert(self) -> Path:
        return self.dir / "tls.crt"

    @property
    def key(self) -> Path:
        return self.dir / "tls.key"


def server_context(files: TLSFiles) -> ssl.SSLContext:
    """TLS 1.2+, this agent's certificate, and a client certificate of the install's CA required."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(files.cert, files.key)
    ctx.load_verify_locations(cafile=files.ca)
    ctx.verify_mode = ssl.CERT_REQUIRED  # OpenSSL also checks its extended key usage is clientAuth
    return ctx


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # nsenter forks into the PID namespace: the group holds both
    except ProcessLookupError:
        pass
    proc.wait()
    for pipe in (
        proc.stdin,
        proc.stdout,
        proc.stderr,
    ):  # the killed group's pipes: a long-lived agent must not leak them
        if pipe is not None:
            pipe.close()


def run_command(
    prefix: Sequence[str], argv: Sequence[str], stdin: bytes | None, timeout: float | None
) -> dict[str, Any]:
    proc = subprocess.Popen(
        [*prefix, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        return {"returncode": -1, "stdout": "", "stderr": f"timed out after {timeout}s", "timed_out": True}
    return {
        "returncode": proc.returncode,
        "stdout": out.decode(errors="replace"),
        "stderr": err.decode(errors="replace"),
        "timed_out": False,
    }


class Handler(BaseHTTPRequestHandler):
    server: AgentServer
    protocol_version = "HTTP/1.0"  # one request per connection; a stream ends when the connection does

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"agent {self.client_address[0]}: {format % args}\n")

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _request(self) -> dict[str, Any] | None:
        size = int(self.headers.get("Content-Length") or 0)
        if size > MAX_BODY:
            self._reply(413, {"error": f"request body over {MAX_BODY} bytes"})
            return None
        try:
            req = json.loads(self.rfile.read(size) or b"{}")
            argv = req["argv"]
            if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
                raise ValueError("argv must be a non-empty list of strings")
        except (ValueError, KeyError, TypeError) as exc:
            self._reply(400, {"error": f"bad request: {exc}"})
            return None
        return dict(req)

    def do_GET(self) -> None:
        if self.path == "/v1/ping":
            self._reply(200, {"node": self.server.node, "version": __version__})
        else:
            self._reply(404, {"error": f"no {self.path}"})

    def do_POST(self) -> None:
        if self.path not in ("/v1/run", "/v1/lines"):
            self._reply(404, {"error": f"no {self.path}"})
            return
        req = self._request()
        if req is None:
            return
        if self.path == "/v1/run":
            stdin = base64.b64decode(req["input"]) if req.get("input") else None
            timeout = float(req["timeout"]) if req.get("timeout") is not None else None
            self._reply(200, run_command(self.server.prefix, req["argv"], stdin, timeout))
        else:
            self._stream(req["argv"])

    def _stream(self, argv: list[str]) -> None:
        proc = subprocess.Popen(
            [*self.server.prefix, *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.end_headers()
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                self.wfile.write(line)
                self.wfile.flush()
        except OSError:
            pass  # the client went away: so does the command
        finally:
            _kill(proc)


class AgentServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], ctx: ssl.SSLContext, node: str, prefix: Sequence[str] = HOST_NAMESPACES
    ) -> None:
        self.ctx, self.node, self.prefix = ctx, node, tuple(prefix)
        super().__init__(address, Handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        """The TLS handshake in the request's own thread: a slow or refused peer holds up nobody else."""
        try:
            conn = self.ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLEOFError, ConnectionError):
            return  # connected and left without a word: the kubelet's tcpSocket probe
        except (ssl.SSLError, OSError) as exc:
            sys.stderr.write(f"agent {client_address[0]}: refused: {exc}\n")
            return
        try:
            Handler(conn, client_address, self)
        finally:
            conn.close()


def serve(
    files: TLSFiles, node: str, port: int = PORT, host: str = "0.0.0.0", prefix: Sequence[str] = HOST_NAMESPACES
) -> None:
    server = AgentServer((host, port), server_context(files), node, prefix)
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sys.stderr.write(f"chaoskit agent {__version__} on {node}, port {server.server_address[1]}\n")
    # as a pod's PID 1 a signal without a handler is ignored: the kubelet would wait out the 30 s grace period and
    # SIGKILL us on every uninstall and rollout. Commands already running go on in their own sessions.
    signal.signal(signal.SIGTERM, _stop)
    try:
        server.serve_forever()
    except SystemExit:
        sys.stderr.write("chaoskit agent stopping (SIGTERM)\n")
    finally:
        server.server_close()


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)
