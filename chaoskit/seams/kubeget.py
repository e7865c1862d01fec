"""GETs through a kubeconfig with the standard library alone: what `chaoskit diagnose` asks of the API, without the
official client, whose import costs a third of a second of CPU a diagnosis spends on its node scripts instead.

Only the plain kubeconfig shapes are served: one file, an https server, its CA (or no verification, when the
kubeconfig says so), and a client certificate or a bearer token. Anything else (exec plugins, auth providers,
proxies, a TLS server name, several files in KUBECONFIG) makes `KubeGet.from_kubeconfig` return None, and the
official client serves it as before.
"""

from __future__ import annotations

import base64
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

if TYPE_CHECKING:  # imported on the first request, in its thread: the command's start does not wait for them
    import http.client
    import ssl

Timeout = tuple[float, float]  # (connect, read) seconds

_CLUSTER_KEYS = {"server", "certificate-authority", "certificate-authority-data", "insecure-skip-tls-verify"}
_USER_KEYS = {"client-certificate", "client-certificate-data", "client-key", "client-key-data", "token", "tokenFile"}


class Refused(Exception):
    """An HTTP answer of 400 or more: its status, reason and body (as the official client's ApiException has them)."""

    def __init__(self, status: int, reason: str, body: bytes) -> None:
        super().__init__(f"HTTP {status} {reason}")
        self.status, self.reason, self.body = status, reason, body


@dataclass(frozen=True)
class Answer:
    """A body read whole (what `Kube.raw` takes from the official client's unread response)."""

    data: bytes


@dataclass
class KubeGet:
    host: str
    port: int
    prefix: str  # the server URL's path, if any
    context: ssl.SSLContext
    token: str = ""
    _idle: list[http.client.HTTPSConnection] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None, context: str | None) -> KubeGet | None:
        """A client of the kubeconfig's context, or None when the kubeconfig is not one of the plain shapes."""
        path = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        if os.pathsep in path:
            return None  # several files merged: the official client's rules
        file = Path(path).expanduser()
        import ssl

        from ruamel.yaml import YAML
        from ruamel.yaml.error import YAMLError

        try:
            return _plain(YAML(typ="safe", pure=False).load(file.read_text()), context, file.parent)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, ssl.SSLError, YAMLError):
            return None  # the official client says what is wrong with it

    def get(self, path: str, query: list[tuple[str, str]], timeout: Timeout | None) -> tuple[int, bytes]:
        """GET `path` (the body, and its status below 400); Refused for an answer of 400 or more. A connection that
        did not answer raises "Connect timed out" or "Read timed out", as urllib3 says it."""
        from http.client import RemoteDisconnected

        url = self.prefix + path + (f"?{urlencode(query)}" if query else "")
        headers = {"Accept": "application/json, */*"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        conn, reused = self._connection(timeout)
        try:
            try:
                conn.request("GET", url, headers=headers)
                resp = conn.getresponse()
            except (ConnectionResetError, BrokenPipeError, RemoteDisconnected):
                if not reused:
                    raise
                conn.close()  # the server closed it while it idled in the pool: once more on a new one
                conn, _ = self._connection(timeout, fresh=True)
                conn.request("GET", url, headers=headers)
                resp = conn.getresponse()
            body = resp.read()
        except TimeoutError as exc:
            conn.close()
            raise TimeoutError(f"Read timed out ({self.host}:{self.port})") from exc
        except BaseException:
            conn.close()
            raise
        if resp.will_close:
            conn.close()
        else:
            with self._lock:
                self._idle.append(conn)
        if resp.status >= 400:
            raise Refused(resp.status, resp.reason, body)
        return resp.status, body

    def _connection(self, timeout: Timeout | None, *, fresh: bool = False) -> tuple[http.client.HTTPSConnection, bool]:
        """A connection with the read timeout set, and whether it was idle in the pool (else made now)."""
        import http.client

        with self._lock:
            conn = self._idle.pop() if self._idle and not fresh else None
        reused = conn is not None
        if conn is None:
            conn = http.client.HTTPSConnection(self.host, self.port, context=self.context)
            conn.timeout = timeout[0] if timeout else None
            try:
                conn.connect()
            except TimeoutError as exc:
                conn.close()
                raise TimeoutError(f"Connect timed out ({self.host}:{self.port})") from exc
        if conn.sock is not None:
            conn.sock.settimeout(timeout[1] if timeout else None)
        return conn, reused


def _plain(config: Any, context: str | None, base: Path) -> KubeGet | None:
    import ssl

    name = context or config.get("current-context")
    ctx = _named(config.get("contexts"), name)
    cluster, user = _named(config.get("clusters"), ctx["cluster"]), _named(config.get("users"), ctx.get("user"))
    if set(ctx) - {"cluster", "user", "namespace", "extensions"}:
        return None
    if set(cluster) - _CLUSTER_KEYS - {"extensions"} or set(user) - _USER_KEYS:
        return None  # a proxy, a TLS server name, an exec plugin, an auth provider...
    server = urlsplit(cluster["server"])
    if server.scheme != "https" or not server.hostname:
        return None
    tls = ssl.create_default_context()
    if cluster.get("insecure-skip-tls-verify"):
        tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
    elif "certificate-authority-data" in cluster:
        tls.load_verify_locations(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    elif "certificate-authority" in cluster:
        tls.load_verify_locations(cafile=str(base / cluster["certificate-authority"]))
    if not _client_pair(tls, user, base) and not ({"token", "tokenFile"} & set(user)):
        return None  # no credentials we know: the official client decides
    token = user.get("token") or ((base / user["tokenFile"]).read_text().strip() if "tokenFile" in user else "")
    return KubeGet(server.hostname, server.port or 443, server.path.rstrip("/"), tls, token)


def _named(entries: Any, name: str | None) -> dict[str, Any]:
    """The body of the kubeconfig list entry called `name` (KeyError when there is none)."""
    for entry in entries or []:
        if entry.get("name") == name:
            return dict(entry.get("context") or entry.get("cluster") or entry.get("user") or {})
    raise KeyError(name)


def _client_pair(tls: ssl.SSLContext, user: dict[str, Any], base: Path) -> bool:
    """Load the user's client certificate and key, if it has them; data is written to a private temporary directory
    for the moment of loading (the ssl module reads pairs from files only)."""
    if "client-certificate" in user and "client-key" in user:
        tls.load_cert_chain(str(base / user["client-certificate"]), str(base / user["client-key"]))
        return True
    if "client-certificate-data" not in user or "client-key-data" not in user:
        return False
    with tempfile.TemporaryDirectory(prefix="chaoskit-kubeget-") as tmp:
        cert, key = Path(tmp, "client.crt"), Path(tmp, "client.key")
        cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
        key.touch(mode=0o600)
        key.write_bytes(base64.b64decode(user["client-key-data"]))
        tls.load_cert_chain(str(cert), str(key))
    return True
