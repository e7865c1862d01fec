"""The node seam through chaoskit's node agent: each node's agent dialled on its address, over mutual TLS.

What an installed cluster uses instead of `docker exec`: no Docker, no pods/exec, and no API server on the path,
so a fault that breaks the API server, the kubelet or the runtime can still be reverted through it. The node
list (names, roles, addresses) comes from the API once and is kept with the credentials, so it also works while
the API server is down.
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaoskit.errors import CommandError
from chaoskit.seams.nodeexec import Node, ordered
from chaoskit.seams.pki import AGENT_NAME
from chaoskit.seams.shell import Completed

PORT = 10370  # the agents' host port: beside the kubelet's and the control plane's, clear of them
CONNECT_TIMEOUT_S = 5.0  # a node that does not answer this fast is down, or its agent is


def shown(node: str, argv: Sequence[str]) -> list[str]:
    """The command a user pastes to run the same thing through the agent."""
    return ["chaoskit", "agent", "exec", node, "--", *argv]


def client_context(ca: Path, cert: Path, key: Path) -> ssl.SSLContext:
    """Trust only the install's CA, present the client certificate, and check the agent's name."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_verify_locations(cafile=ca)
    ctx.load_cert_chain(cert, key)
    return ctx


class _Connection(http.client.HTTPSConnection):
    """Dials the node's address, and checks the certificate against the agents' one name, not the address."""

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), CONNECT_TIMEOUT_S)
        sock.settimeout(self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=AGENT_NAME)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class AgentNode:
    name: str
    role: str
    address: str  # host:port of its agent


class LineStream:
    def __init__(self, conn: http.client.HTTPSConnection, response: http.client.HTTPResponse) -> None:
        self.conn, self.response = conn, response

    def __iter__(self) -> Iterator[str]:
        for raw in self.response:
            yield raw.decode(errors="replace")

    def close(self) -> None:
        self.response.close()  # it holds the socket open past the connection's own close
        self.conn.close()  # the agent kills the command when its connection goes


@dataclass(frozen=True)
class AgentNodeExec:
    """Runs node commands through each node's agent."""

    nodes: Sequence[AgentNode]
    tls: ssl.SSLContext = field(repr=False)
    via: str = "chaoskit agent"

    def list_nodes(self) -> list[Node]:
        return ordered([Node(n.name, n.role) for n in self.nodes])

    def _node(self, node: Node) -> AgentNode:
        for n in self.nodes:
            if n.name == node.name:
                return n
        raise CommandError(shown(node.name, []), 255, "", note=f"no agent known for node {node.name!r}")

    def _connect(self, node: AgentNode, timeout: float | None) -> _Connection:
        host, _, port = node.address.rpartition(":")
        return _Connection(host, int(port), context=self.tls, timeout=timeout)

    def _post(
        self, node: AgentNode, path: str, body: Mapping[str, Any], timeout: float | None, argv: Sequence[str]
    ) -> tuple[_Connection, http.client.HTTPResponse]:
        conn = self._connect(node, timeout)
        cmd = shown(node.name, argv)
        try:
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            response = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise CommandError(cmd, 255, "", note=f"chaoskit's agent on {node.name} ({node.address}): {exc}") from exc
        if response.status != 200:
            text = response.read().decode(errors="replace")
            conn.close()
            raise CommandError(cmd, 255, text, note=f"chaoskit's agent on {node.name} answered {response.status}")
        return conn, response

    def run(
        self,
        node: Node,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> Completed:
        target = self._node(node)
        body = {"argv": list(argv), "input": base64.b64encode(input).decode() if input else None, "timeout": timeout}
        wait = None if timeout is None else timeout + 10  # the agent ends the command at `timeout` and answers
        conn, response = self._post(target, "/v1/run", body, wait, argv)
        try:
            done = json.loads(response.read())
        except (OSError, ValueError) as exc:
            raise CommandError(shown(node.name, argv), 255, "", note=f"no answer from the agent: {exc}") from exc
        finally:
            conn.close()
        result = Completed(tuple(argv), int(done["returncode"]), done["stdout"], done["stderr"])
        if done.get("timed_out"):
            raise CommandError(shown(node.name, argv), -1, result.output, note=f"timed out after {timeout}s")
        if check and result.returncode != 0:
            raise CommandError(shown(node.name, argv), result.returncode, result.output)
        return result

    def lines(self, node: Node, argv: Sequence[str]) -> LineStream:
        conn, response = self._post(self._node(node), "/v1/lines", {"argv": list(argv)}, None, argv)
        return LineStream(conn, response)
