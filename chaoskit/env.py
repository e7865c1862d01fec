"""Env: the seams a fault, check, measurement or diagnoser may touch — the API server and the nodes.

`Env.for_kind` is the one place an Env is built for a real kind cluster; unit tests build one from fakes.
"""

from __future__ import annotations

from dataclasses import dataclass

from chaoskit.seams.kube import Kube
from chaoskit.seams.nodeexec import DockerNodeExec, NodeExec
from chaoskit.seams.shell import Runner, SubprocessRunner


@dataclass(frozen=True)
class Env:
    """The seams a fault may touch."""

    kube: Kube
    nodes: NodeExec
    cluster: str

    @classmethod
    def for_kind(cls, kube: Kube, cluster: str, shell: Runner | None = None) -> Env:
        """A kind cluster's seams: its nodes are containers reached by `docker exec` through `shell`."""
        return cls(kube, DockerNodeExec(shell or SubprocessRunner(), cluster), cluster)
