"""The kubeconfig's plain shapes read without the official client: a real HTTPS server asking for the install's
client certificate, and every shape that is left to the official client."""

from __future__ import annotations

import base64
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from chaoskit.seams import pki
from chaoskit.seams.kube import Kube, KubeError, NotFound
from chaoskit.seams.kubeget import KubeGet

ISSUED = pki.issue("test")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # connections kept alive, as the API server keeps them

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path == "/closing":  # answered as kept alive, then closed: what an idle timeout does
            self._send(200, "bye")
            self.close_connection = True
        elif self.path.startswith("/missing"):
            self._send(404, {"kind": "Status", "message": 'nodes "missing" not found'})
        elif self.path == "/readyz":
            self._send(200, "ok")
        else:
            self._send(200, {"path": self.path, "auth": self.headers.get("Authorization", "")})

    def _send(self, status: int, body: Any) -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """An HTTPS server that takes only clients with a certificate of ISSUED's CA."""
    tmp = tmp_path_factory.mktemp("tls")
    (tmp / "server.crt").write_bytes(ISSUED.server.cert)
    (tmp / "server.key").write_bytes(ISSUED.server.key)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(tmp / "server.crt", tmp / "server.key")
    tls.load_verify_locations(cadata=ISSUED.ca.decode())
    tls.verify_mode = ssl.CERT_REQUIRED
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()


def kubeconfig(
    tmp_path: Path, server: str, *, user: dict[str, Any] | None = None, cluster: dict[str, Any] | None = None
) -> str:
    b64 = lambda data: base64.b64encode(data).decode()  # noqa: E731
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "kind-test",
        "contexts": [{"name": "kind-test", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": cluster or {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [
            {
                "name": "u",
                "user": user
                if user is not None
                else {
                    "client-certificate-data": b64(ISSUED.client.cert),
                    "client-key-data": b64(ISSUED.client.key),
                },
            }
        ],
    }
    path = tmp_path / "kubeconfig"
    YAML().dump(config, path)
    return str(path)


def test_a_client_certificates_get_answers_json_and_a_404_is_not_found(server: int, tmp_path: Path) -> None:
    kube = Kube.connect(kubeconfig(tmp_path, f"https://127.0.0.1:{server}"), "kind-test", lazy=True)
    assert kube.get("/api/v1/pods", fieldSelector="spec.nodeName=w") == {
        "path": "/api/v1/pods?fieldSelector=spec.nodeName%3Dw",
        "auth": "",
    }
    assert kube.raw("/readyz") == "ok"
    assert kube.find("/missing") is None
    with pytest.raises(NotFound, match=r'GET /missing: HTTP 404 Not Found: nodes "missing" not found'):
        kube.get("/missing")
    assert kube.requests == 4


def test_a_kept_connection_the_server_closed_meanwhile_is_replaced_not_taken_for_a_dead_server(
    server: int, tmp_path: Path
) -> None:
    kube = Kube.connect(kubeconfig(tmp_path, f"https://127.0.0.1:{server}"), lazy=True)
    assert kube.raw("/readyz") == "ok" and kube.raw("/readyz") == "ok"  # the second on the kept connection
    assert kube.raw("/closing") == "bye"
    time.sleep(0.2)  # the server has closed it by now; the pool still holds it
    assert kube.raw("/readyz") == "ok"


def test_a_bearer_token_is_sent_and_a_client_the_server_does_not_know_gets_no_answer(
    server: int, tmp_path: Path
) -> None:
    kube = Kube.connect(kubeconfig(tmp_path, f"https://127.0.0.1:{server}", user={"token": "abc"}), lazy=True)
    with pytest.raises(KubeError) as refused:  # the server asks for a client certificate this one does not have
        kube.get("/api/v1/nodes")
    assert refused.value.status is None


def test_nothing_listening_is_no_answer_as_the_official_client_says_it(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    kube = Kube.connect(kubeconfig(tmp_path, f"https://127.0.0.1:{port}"), lazy=True).bounded((1.0, 1.0))
    with pytest.raises(KubeError, match=r"\[Errno 111\] Connection refused") as refused:
        kube.get("/readyz")
    assert refused.value.status is None


def test_a_server_that_never_answers_times_out_as_urllib3_says_it(tmp_path: Path) -> None:
    with socket.socket() as listening:  # the kernel completes the handshake; nobody reads (a frozen API server)
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        kube = Kube.connect(kubeconfig(tmp_path, f"https://127.0.0.1:{port}"), lazy=True).bounded((0.3, 0.3))
        with pytest.raises(KubeError, match=r"(Connect|Read) timed out") as hung:
            kube.get("/readyz")
    assert hung.value.status is None


@pytest.mark.parametrize(
    ("user", "cluster"),
    [
        ({"exec": {"command": "aws", "apiVersion": "client.authentication.k8s.io/v1"}}, None),
        ({"auth-provider": {"name": "gcp"}}, None),
        ({"username": "admin", "password": "secret"}, None),
        ({"token": "abc", "as": "someone"}, None),
        ({}, None),  # no credentials
        ({"token": "abc"}, {"server": "https://127.0.0.1:6443", "proxy-url": "http://proxy:3128"}),
        ({"token": "abc"}, {"server": "https://127.0.0.1:6443", "tls-server-name": "kubernetes"}),
        ({"token": "abc"}, {"server": "http://127.0.0.1:8080"}),
    ],
    ids=["exec", "auth-provider", "basic", "impersonation", "none", "proxy", "tls-server-name", "http"],
)
def test_every_other_shape_is_left_to_the_official_client(
    tmp_path: Path, user: dict[str, Any], cluster: dict[str, Any] | None
) -> None:
    assert (
        KubeGet.from_kubeconfig(kubeconfig(tmp_path, "https://127.0.0.1:6443", user=user, cluster=cluster), None)
        is None
    )


def test_several_kubeconfig_files_or_an_unknown_context_are_left_to_the_official_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = kubeconfig(tmp_path, "https://127.0.0.1:6443", user={"token": "abc"})
    assert KubeGet.from_kubeconfig(path, None) is not None
    assert KubeGet.from_kubeconfig(path, "no-such-context") is None
    monkeypatch.setenv("KUBECONFIG", f"{path}:{path}")
    assert KubeGet.from_kubeconfig(None, None) is None
