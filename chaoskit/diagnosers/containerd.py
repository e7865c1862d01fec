"""Container runtime diagnosis, per node: does containerd answer the CRI as kubelet asks it, is it running or
frozen, are its network and runtime ready, are containers crash-looping.

Everything here is read inside the node (crictl over containerd's socket, systemd, ps), so it needs no API server.
A frozen containerd makes every CRI call hang, so each one carries its own timeout.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from chaoskit.components import containerd
from chaoskit.components.common import CRICTL, pid_command, thaw_command
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Finding, register
from chaoskit.diagnosers.kit.common import excerpt, uncollected, unread
from chaoskit.diagnosers.kit.sources import Section, Sources
from chaoskit.diagnosers.kit.staticpod import ALL_CONTAINERS
from chaoskit.model.params import FaultParams


class ContainerdParams(FaultParams):
    crash_loop_restarts: int = Field(default=3, description="Restarts of an exited container that make a crash loop.")


@dataclass(frozen=True)
class ContainerdEvidence:
    node: str
    info: Section  # crictl info: JSON with status.conditions, or the error / timeout
    service: str  # systemctl is-active containerd
    stat: str  # ps state letters of containerd ("T..." when stopped), "" when absent
    containers: Section  # crictl ps -a -o json
    journal: str
    unread: str = ""  # why systemd or the process could not be looked at (the node script cut off): no verdict then


@register
class ContainerdDiagnoser(Diagnoser[ContainerdEvidence, ContainerdParams]):
    """containerd on each node: answers the CRI, runtime and network ready, not frozen, no crash-looping containers."""

    component = "containerd"
    per_node = True
    Params = ContainerdParams

    def collect(self, src: Sources, node: str) -> ContainerdEvidence:
        s = src.sections(
            node,
            {
                "info": f"{CRICTL} info",
                "service": f"systemctl is-active {containerd.SERVICE}",
                "process": f'{pid_command(containerd.PROCESS)} && ps -o stat= -p "$pid"',
                "containers": ALL_CONTAINERS,
                "journal": "journalctl -u containerd --since '-5 min' --no-pager -o short-iso | tail -n 300",
            },
        )
        return ContainerdEvidence(
            node=node,
            info=s["info"],
            service=(s["service"].output.split() or ["unknown"])[0],
            stat=s["process"].text if s["process"].ok else "",
            containers=s["containers"],
            journal=s["journal"].output,
            unread=unread(s["service"]) or unread(s["process"]),
        )

    def assess(self, ev: ContainerdEvidence) -> list[Assessed]:
        return [self._cri(ev), self._crash_loops(ev)]

    def _cri(self, ev: ContainerdEvidence) -> Assessed:
        conditions = _conditions(ev.info)
        e = Evidence(
            "cri",
            f"crictl info; systemctl is-active containerd; ps -o stat containerd on {ev.node}",
            {
                "answers": ev.info.ok,
                "systemd": ev.service,
                "process": ev.stat or "absent",
                "error": None if ev.info.ok else ev.info.text[-200:] or f"exit {ev.info.rc}",
            },
            log_lines=excerpt(ev.journal, ("error", "timeout")),
            conditions=tuple(f"{k}={v}" for k, v in conditions.items()),
        )
        if ev.unread:  # a look cut short said "not running" of a containerd that was fine
            return Assessed(e, (uncollected("containerd", ev.node, "containerd", ev.unread, e),))
        finding = _cri_finding(ev, e, conditions)
        return Assessed(e, (finding,) if finding else ())

    def _crash_loops(self, ev: ContainerdEvidence) -> Assessed:
        source = f"crictl ps -a -o json on {ev.node}"
        if not ev.containers.ok:
            return Assessed(Evidence("crash-loops", source, {"error": ev.containers.text[-200:]}, available=False))
        looping = _crash_looping(ev.containers.output, self.p.crash_loop_restarts)
        e = Evidence("crash-loops", source, {"crash_looping": len(looping)}, conditions=tuple(looping[:10]))
        if not looping:
            return Assessed(e)
        return Assessed(
            e,
            (
                Finding(  # info: the runtime runs them as asked; the workloads' report names each one's cause
                    "info",
                    "containerd",
                    f"{len(looping)} container(s) crash-looping on {ev.node}: {looping[0]}",
                    "their newest container exited after several restarts: the application fails at start (its logs "
                    "say why), or a probe kills it; the runtime itself is not the cause",
                    (e,),
                    (f"crictl logs of the exited container on {ev.node}; kubectl describe pod for probe failures",),
                ),
            ),
        )


def _conditions(info: Section) -> dict[str, bool]:
    if not info.ok:
        return {}
    try:
        status = json.loads(info.output).get("status") or {}
    except ValueError:
        return {}
    return {str(c.get("type")): bool(c.get("status")) for c in status.get("conditions") or []}


def _crash_looping(text: str, restarts: int) -> list[str]:
    """Pods' containers whose newest instance is exited after at least `restarts` restarts."""
    try:
        containers: list[dict[str, Any]] = json.loads(text).get("containers") or []
    except ValueError:
        return []
    newest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for c in containers:
        labels = c.get("labels") or {}
        key = (
            labels.get("io.kubernetes.pod.namespace", ""),
            labels.get("io.kubernetes.pod.name", ""),
            (c.get("metadata") or {}).get("name", ""),
        )
        if key not in newest or int(c.get("createdAt") or 0) > int(newest[key].get("createdAt") or 0):
            newest[key] = c
    out = []
    for (ns, pod, name), c in sorted(newest.items()):
        count = str((c.get("annotations") or {}).get("io.kubernetes.container.restartCount", "0"))
        if c.get("state") == "CONTAINER_EXITED" and count.isdigit() and int(count) >= restarts:
            out.append(f"{ns}/{pod}/{name} (restarts {count})")
    return out


def _cri_finding(ev: ContainerdEvidence, e: Evidence, conditions: dict[str, bool]) -> Finding | None:
    """Frozen, not running, not answering, or not ready by its own conditions; None when it answers ready."""
    remedy = (
        f"systemctl status containerd and journalctl -u containerd on {ev.node}",
        f"systemctl restart containerd on {ev.node} (running containers survive a restart)",
    )
    if ev.stat.startswith("T"):
        return Finding(
            "critical",
            "containerd",
            f"containerd is stopped on {ev.node} (process state {ev.stat})",
            "containerd is frozen: every CRI call from kubelet hangs, PLEG goes unhealthy, no pod starts or stops",
            (e,),
            (f"on {ev.node}: {thaw_command(containerd.PROCESS)} (if it was stopped on purpose)", *remedy),
        )
    if ev.service != "active" or not ev.stat:
        return Finding(
            "critical",
            "containerd",
            f"containerd is not running on {ev.node} (systemd: {ev.service})",
            "no container runtime: kubelet reports the node NotReady (container runtime is down)",
            (e,),
            remedy,
        )
    if not ev.info.ok:
        return Finding(
            "critical",
            "containerd",
            f"containerd on {ev.node} does not answer CRI calls",
            "containerd runs but hangs or is overloaded: kubelet's relists time out (PLEG not healthy)",
            (e,),
            remedy,
        )
    down = [k for k, v in conditions.items() if not v]
    if down:
        return Finding(
            "critical",
            "containerd",
            f"container runtime on {ev.node} not ready: {', '.join(down)}",
            "NetworkReady=false: the CNI configuration or plugin is missing, no pod gets a network"
            if "NetworkReady" in down
            else "the runtime reports itself not ready",
            (e,),
            (f"crictl info on {ev.node}: the conditions' reason and message", *remedy),
        )
    return None
