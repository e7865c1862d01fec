"""The node agent and its client over real mutual TLS on localhost: commands run as the node would run them
(without nsenter here), streams end with their client, and a peer without the install's client certificate is
refused before anything runs."""

from __future__ import annotations

import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chaoskit.agent.server import AgentServer, TLSFiles, server_context
from chaoskit.errors import CommandError
from chaoskit.seams.agentexec import AgentNode, AgentNodeExec, client_context
from chaoskit.seams.nodeexec import Node
from chaoskit.seams.pki import AGENT_NAME, Issued, Pair, issue

NODE_A = Node("node-a", "worker")


def _write(dir: Path, ca: bytes, pair: Pair) -> TLSFiles:
    dir.mkdir(parents=True)
    (dir / "ca.crt").write_bytes(ca)
    (dir / "tls.crt").write_bytes(pair.cert)
    (dir / "tls.key").write_bytes(pair.key)
    return TLSFiles(dir)


@pytest.fixture(scope="module")
def issued() -> Issued:
    return issue("test")


@pytest.fixture
def agent(issued: Issued, tmp_path: Path) -> Iterator[AgentNodeExec]:
    server = AgentServer(
        ("127.0.0.1", 0), server_context(_write(tmp_path / "server", issued.ca, issued.server)), "node-a", prefix=()
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = _write(tmp_path / "client", issued.ca, issued.client)
    port = server.server_address[1]
    nodes = [AgentNode("node-a", "worker", f"127.0.0.1:{port}"), AgentNode("cp", "control-plane", f"127.0.0.1:{port}")]
    yield AgentNodeExec(nodes, client_context(client.ca, client.cert, client.key))
    server.shutdown()
    server.server_close()


def test_a_command_runs_with_its_input_and_answers_its_output_and_exit(agent: AgentNodeExec) -> None:
    done = agent.run(NODE_A, ["sh", "-c", "cat; echo err >&2; exit 3"], input=b"manifest\n", check=False)
    assert (done.returncode, done.stdout, done.stderr) == (3, "manifest\n", "err\n")
    assert agent.list_nodes() == [Node("cp", "control-plane"), Node("node-a", "worker")]


def test_a_failure_carries_the_command_to_paste(agent: AgentNodeExec) -> None:
    with pytest.raises(CommandError) as err:
        agent.run(NODE_A, ["sh", "-c", "echo no such unit >&2; exit 5"])
    assert "chaoskit agent exec node-a -- sh -c" in str(err.value) and "no such unit" in str(err.value)
    with pytest.raises(CommandError, match="no agent known for node 'node-z'"):
        agent.run(Node("node-z", "worker"), ["true"])


def test_a_command_past_its_timeout_is_killed(agent: AgentNodeExec) -> None:
    t0 = time.monotonic()
    with pytest.raises(CommandError, match="timed out after 0.5s"):
        agent.run(NODE_A, ["sleep", "30"], timeout=0.5)
    assert time.monotonic() - t0 < 5


def test_a_stream_yields_lines_and_its_command_ends_with_the_client(agent: AgentNodeExec, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    stream = agent.lines(
        NODE_A, ["sh", "-c", f"echo $$ > {pid_file}; i=0; while :; do i=$((i+1)); echo $i; sleep 0.05; done"]
    )
    got = []
    for line in stream:
        got.append(line.strip())
        if len(got) == 3:
            break
    stream.close()
    assert got == ["1", "2", "3"]
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 20  # generous: a loaded host (unit tests on every core) is slow to reap it
    while _alive(pid) and time.monotonic() < deadline:  # the loop writes into a closed socket, then is killed
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:  # the process may go between the two looks: then /proc answers ESRCH or ENOENT
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


def _raw_request(port: int, ctx: ssl.SSLContext) -> bytes:
    with (
        socket.create_connection(("127.0.0.1", port), 5) as sock,
        ctx.wrap_socket(sock, server_hostname=AGENT_NAME) as tls,
    ):
        tls.sendall(b'POST /v1/run HTTP/1.0\r\nContent-Length: 40\r\n\r\n{"argv": ["touch", "/tmp/chaoskit-x"]}  ')
        return tls.recv(100)


@pytest.mark.parametrize("who", ["no certificate", "another CA's client", "the agent's own server certificate"])
def test_a_peer_without_the_installs_client_certificate_is_refused_and_nothing_runs(
    who: str, agent: AgentNodeExec, issued: Issued, tmp_path: Path
) -> None:
    port = int(agent.nodes[0].address.rsplit(":", 1)[1])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cadata=issued.ca.decode())
    if who != "no certificate":
        other = issue("another") if who == "another CA's client" else None
        files = _write(tmp_path / "peer", issued.ca, other.client if other else issued.server)
        ctx.load_cert_chain(files.cert, files.key)
    marker = Path("/tmp/chaoskit-x")
    marker.unlink(missing_ok=True)
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        answer = _raw_request(port, ctx)
        if not answer:  # TLS 1.3 reports the refused certificate on the first read
            raise ConnectionError("closed")
    time.sleep(0.2)
    assert not marker.exists()


def test_a_client_refuses_an_agent_whose_certificate_another_ca_signed(issued: Issued, tmp_path: Path) -> None:
    other = issue("impostor")
    server = AgentServer(
        ("127.0.0.1", 0), server_context(_write(tmp_path / "s", other.ca, other.server)), "n", prefix=()
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        files = _write(tmp_path / "c", issued.ca, issued.client)
        agent = AgentNodeExec(
            [AgentNode("n", "worker", f"127.0.0.1:{server.server_address[1]}")],
            client_context(files.ca, files.cert, files.key),
        )
        with pytest.raises(CommandError, match="certificate verify failed"):
            agent.run(Node("n", "worker"), ["true"])
    finally:
        server.shutdown()
        server.server_close()


def test_serve_ends_at_once_on_sigterm_as_a_pods_process_must(issued: Issued, tmp_path: Path) -> None:
    """The kubelet stops a pod with SIGTERM; an agent that ignored it would hold every uninstall for 30 s."""
    files = _write(tmp_path / "server", issued.ca, issued.server)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = (
        f"from pathlib import Path; from chaoskit.agent.server import serve, TLSFiles; "
        f"serve(TLSFiles(Path({str(files.dir)!r})), 'n', {port}, '127.0.0.1', ())"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not _listening(port):
            assert time.monotonic() < deadline and proc.poll() is None, "the agent did not start"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, said = proc.communicate(timeout=5)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == 0 and "stopping (SIGTERM)" in said


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
