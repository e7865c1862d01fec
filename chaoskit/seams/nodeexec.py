"""The node seam: list the cluster's nodes with their roles, run an argv on one, read a command's lines.

Every fault, node-side check, diagnoser and measurement stands on it. Two providers: DockerNodeExec reaches kind
node containers with `docker exec` (chaoskit beside a kind cluster it built), AgentNodeExec (chaoskit.agent) reaches
the node agent every node of an installed cluster runs. FakeNodeExec records calls for unit tests. Failures carry
a command to paste and its output tail.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from chaoskit.errors import UsageError
from chaoskit.seams.nodecontainers import node_containers
from chaoskit.seams.shell import Completed, FakeRunner, Runner, end

VERIFY_MARK = "chaoskit-verify"  # $0 of a revert's verify line asked while its fault holds (it reverts nothing)
# how many times a verify line's waits try (they wait for what an undo set going): once, asked while the fault holds
VERIFY_TRIES = "CHAOSKIT_VERIFY_TRIES"


def verify_argv(line: str, timeout: float) -> list[str]:
    """A revert's verify line asked on its own while its fault holds: its waits try once (nothing was undone to
    wait for), and it is cut off after `timeout`."""
    return ["env", f"{VERIFY_TRIES}=1", "timeout", "-k", "2", f"{timeout:g}", "sh", "-c", line, VERIFY_MARK]


CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"  # kubeadm's mark of what role "control-plane" is
ROLES = {True: "control-plane", False: "worker"}  # a node's role by whether it has CONTROL_PLANE_LABEL


@dataclass(frozen=True)
class Node:
    name: str
    role: str  # "control-plane" or "worker"; "" for a node known only by its name (`named`)


def named(name: str, nodes: Sequence[Node] = ()) -> Node:
    """The node a name read elsewhere stands for (a journal's, the command line's, a pod's nodeName): the one so named
    among `nodes`, else the name alone, so a command sent to a node gone since fails there as it would have."""
    return next((n for n in nodes if n.name == name), Node(name, ""))


def api_nodes(objs: Iterable[Mapping[str, Any]]) -> list[Node]:
    """The API server's Node objects as nodes to run commands on, by name, each its role by kubeadm's label."""
    return sorted(
        (Node(o["metadata"]["name"], ROLES[CONTROL_PLANE_LABEL in (o["metadata"].get("labels") or {})]) for o in objs),
        key=lambda n: n.name,
    )


def ordered(nodes: list[Node]) -> list[Node]:
    """Control-plane nodes first, then by name: the order every listing uses."""
    return sorted(nodes, key=lambda n: (n.role != "control-plane", n.name))


def pick(nodes: Sequence[Node], wanted: str | None, default_role: str) -> Node:
    """The node a target names: a node's name, a role (its first node by name), or None / "any" for `default_role`.

    The one place a role becomes a node: playbook targets, `chaoskit inject --node`, probes and a fault's own
    params all pick this way, so a dry run shows the node the run will use."""
    for n in nodes:
        if n.name == wanted:
            return n
    role = default_role if wanted in (None, "any") else wanted
    for n in sorted(nodes, key=lambda n: n.name):
        if n.role == role:
            return n
    names = ", ".join(n.name for n in nodes) or "none"
    if role == "control-plane" and wanted in (None, "any", role):  # the agents reach no control-plane node
        raise UsageError(
            f"no control-plane node chaoskit can reach (it reaches: {names}): a managed control plane, or "
            "`chaoskit install --nodes workers`, has no agent there, so this fault cannot be injected; "
            "nothing was injected"
        )
    raise UsageError(f"no node {wanted!r} (role {role}) in this cluster; nodes: {names}")


class NodeExec(Protocol):
    @property
    def via(self) -> str:
        """How the nodes are reached, in words for progress lines and events ("docker exec", "chaoskit agent")."""
        ...

    def list_nodes(self) -> list[Node]:
        """The cluster's nodes, control plane first; empty when there is no such cluster."""
        ...

    def run(
        self,
        node: Node,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> Completed: ...

    def lines(self, node: Node, argv: Sequence[str]) -> Stream:
        """Start a long-running command on the node and read its stdout line by line."""
        ...


class Stream(Protocol):
    def __iter__(self) -> Iterator[str]: ...

    def close(self) -> None: ...


class PopenStream:
    """A command's stdout as lines; close() ends the local process (the caller ends what runs in the node)."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def __iter__(self) -> Iterator[str]:
        assert self.proc.stdout is not None
        return iter(self.proc.stdout)

    def close(self) -> None:
        end(self.proc)


@dataclass(frozen=True)
class DockerNodeExec:
    runner: Runner
    cluster: str = ""  # whose node containers list_nodes() finds
    via: str = "docker exec"
    known: tuple[Node, ...] = ()  # the nodes a caller already listed: list_nodes() answers them without `docker ps`

    def list_nodes(self) -> list[Node]:
        if self.known:
            return list(self.known)
        return [Node(c.name, c.role) for c in node_containers(self.runner, self.cluster)]

    def run(
        self,
        node: Node,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> Completed:
        return self.runner.run(["docker", "exec", "-i", node.name, *argv], input=input, timeout=timeout, check=check)

    def lines(self, node: Node, argv: Sequence[str]) -> Stream:
        return PopenStream(["docker", "exec", node.name, *argv])


@dataclass
class FakeNodeExec:
    """Answers from a FakeRunner keyed by (node, *argv); records (node, argv) pairs."""

    runner: FakeRunner = field(default_factory=FakeRunner)
    streams: dict[str, list[str]] = field(default_factory=dict)  # node -> the lines `lines()` yields
    nodes: list[Node] = field(default_factory=list)  # what list_nodes() answers
    via: str = "a fake"
    # a verify line asked while its fault holds fails, as a working one does on a real node; True: it is blind
    verify_passes: bool = False

    def list_nodes(self) -> list[Node]:
        return ordered(self.nodes)

    @property
    def calls(self) -> list[tuple[str, ...]]:
        return self.runner.calls

    def run(
        self,
        node: Node,
        argv: Sequence[str],
        *,
        input: bytes | None = None,
        timeout: float | None = None,
        check: bool = True,
    ) -> Completed:
        if argv and argv[-1] == VERIFY_MARK:
            self.runner.calls.append((node.name, *argv))
            return Completed((node.name, *argv), 0 if self.verify_passes else 1, "" if self.verify_passes else "holds")
        return self.runner.run([node.name, *argv], input=input, timeout=timeout, check=check)

    def lines(self, node: Node, argv: Sequence[str]) -> Stream:
        self.runner.calls.append((node.name, *argv))
        return ListStream(list(self.streams.get(node.name, [])))


@dataclass
class ListStream:
    items: list[str]
    closed: bool = False

    def __iter__(self) -> Iterator[str]:
        return iter(self.items)

    def close(self) -> None:
        self.closed = True
