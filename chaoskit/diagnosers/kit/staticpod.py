"""The node-local view of a component's process: is it running, frozen or gone, where is its static-pod manifest,
what did its last container do and say. This is what still answers when the API server does not."""

from __future__ import annotations

import json
from dataclasses import dataclass

from chaoskit.components.common import CRICTL, MANIFESTS, comm, manifest, pid_command, thaw_command
from chaoskit.diagnosers.kit.base import Assessed, Evidence, Finding
from chaoskit.diagnosers.kit.common import HttpAnswer, excerpt, http_command, metrics_of, uncollected, unread
from chaoskit.diagnosers.kit.sources import Section, Sources
from chaoskit.seams.scrape import Metrics, scrape_command

ALL_CONTAINERS = f"{CRICTL} ps -a -o json"


def process_commands(process: str, *, container: str | None = None, static_pod: bool = True) -> dict[str, str]:
    """Node-script commands for `process_state`: its state letter, manifests, containers and last log lines."""
    name = container or process
    commands = {
        "process": f'{pid_command(process)} && ps -o stat= -p "$pid"',
        "containers": ALL_CONTAINERS,  # every container, as containerd's diagnoser reads it: one crictl call a node
        # the newest log file of its containers, as `crictl logs` prints it, without two crictl calls a component
        "logs": f'f=$(ls -t /var/log/pods/kube-system_*/{name}/*.log 2>/dev/null | head -n1) && [ -n "$f" ] && '
        f"tail -n 300 \"$f\" | sed -E 's/^[^ ]+ (stdout|stderr) [FP] //'",
    }
    if static_pod:  # the manifest wherever it is under /etc/kubernetes: moved away is the "down" fault's signature
        commands["manifest"] = f"find /etc/kubernetes -name '{process}.yaml*' 2>/dev/null"
    return commands


def collect_local(
    src: Sources, node: str, process: str, healthz: str, metrics_url: str, metrics: tuple[str, ...]
) -> tuple[HttpAnswer, Metrics, ProcessState]:
    """One node script for a control-plane process: its /healthz, a metrics scrape and its process state."""
    s = src.sections(
        node,
        {
            "healthz": http_command(healthz),
            "metrics": scrape_command(metrics_url, metrics, client_cert=True),
            **process_commands(process),
        },
    )
    return HttpAnswer.of(s["healthz"]), metrics_of(s["metrics"]), ProcessState.of(process, s)


@dataclass(frozen=True)
class ProcessState:
    process: str
    stat: str  # ps state letters ("Ssl", "Tsl" when stopped); "" when no such process
    manifests: tuple[str, ...] | None  # every file named <process>.yaml* under /etc/kubernetes; None: not a static pod
    container_state: str  # the newest container's state (CONTAINER_RUNNING, CONTAINER_EXITED...), "" if unknown
    restarts: int | None
    log: str  # the newest container's last lines
    unread: str = ""  # why the process could not be looked at (its command cut off or not run): no verdict then

    @classmethod
    def of(cls, process: str, sections: dict[str, Section], container: str | None = None) -> ProcessState:
        found = sections["process"]
        stat = found.text if found.ok else ""
        manifest = sections.get("manifest")
        # a manifest search that did not finish found nothing: unknown, not "moved away"
        manifests = (
            tuple(line.strip() for line in manifest.output.splitlines() if line.strip())
            if manifest and manifest.rc is not None
            else None
        )
        state, restarts = _newest_container(sections["containers"], container or process)
        return cls(process, stat, manifests, state, restarts, sections["logs"].output, unread(found))

    @property
    def running(self) -> bool:
        return bool(self.stat) and not self.stopped and not self.stat.startswith("Z")

    @property
    def stopped(self) -> bool:
        return self.stat.startswith("T")

    @property
    def manifest_in_place(self) -> bool | None:
        if self.manifests is None:
            return None
        return manifest(self.process) in self.manifests

    def evidence(self, node: str) -> Evidence:
        observed: dict[str, str | int | bool | None] = {
            "state": self.stat or ("not read" if self.unread else "absent"),
            "container": self.container_state or "unknown",
            "restarts": self.restarts,
        }
        if self.manifests is not None:
            observed["manifest_in_place"] = self.manifest_in_place
            observed["manifest_found_at"] = ", ".join(self.manifests) or "nowhere under /etc/kubernetes"
        return Evidence(
            "process",
            f"pgrep -x {comm(self.process)}, crictl ps -a, its newest log in /var/log/pods on {node}",
            observed,
            log_lines=excerpt(self.log),
        )


def _newest_container(section: Section, name: str) -> tuple[str, int | None]:
    try:
        listed = json.loads(section.output).get("containers") or []
    except (ValueError, AttributeError):
        return "", None
    containers = [c for c in listed if (c.get("metadata") or {}).get("name") == name]
    if not containers:
        return "", None
    newest = max(containers, key=lambda c: int(c.get("createdAt") or 0))
    count = str((newest.get("annotations") or {}).get("io.kubernetes.container.restartCount"))
    return str(newest.get("state", "")), int(count) if count.isdigit() else None


def assess_process(component: str, node: str, p: ProcessState, *, frozen_effect: str, down_effect: str) -> Assessed:
    """Frozen, gone with its manifest moved, gone with the manifest in place (crash), or running."""
    ev = p.evidence(node)
    if p.unread:  # a loaded node cut the look off: saying "not running" here named components that were fine
        return Assessed(ev, (uncollected(component, node, p.process, p.unread, ev),))
    if p.stopped:
        return Assessed(ev, (_frozen(component, node, p, ev, frozen_effect),))
    if p.running:
        return Assessed(ev, (_restarted(component, node, p, ev),) if p.restarts else ())
    if p.manifest_in_place is False:
        return Assessed(ev, (_manifest_gone(component, node, p, ev, down_effect),))
    return Assessed(ev, (_crashing(component, node, p, ev, down_effect),))


def _frozen(component: str, node: str, p: ProcessState, ev: Evidence, effect: str) -> Finding:
    return Finding(
        "critical",
        component,
        f"{p.process} is stopped (process state {p.stat})",
        f"the process is frozen (SIGSTOP or a hang): it holds its port and its leader lease but does nothing; {effect}",
        (ev,),
        (
            f"on {node}: {thaw_command(p.process)} (if something stopped it on purpose)",
            "otherwise wait for kubelet's liveness probe to restart it, or delete its container with crictl",
            f"crictl logs $(crictl ps --name '^{p.process}$' -q) to see what it did last",
        ),
    )


def _restarted(component: str, node: str, p: ProcessState, ev: Evidence) -> Finding:
    return Finding(
        "info",
        component,
        f"{p.process} restarted {p.restarts} time(s)",
        "kubelet restarted the container (a failed liveness probe, a crash, or a fault injected earlier)",
        (ev,),
        (f"crictl ps -a --name '^{p.process}$' on {node} for the earlier containers",),
    )


def _manifest_gone(component: str, node: str, p: ProcessState, ev: Evidence, effect: str) -> Finding:
    elsewhere = [m for m in p.manifests or () if m != manifest(p.process)]
    found = f" (found at {', '.join(elsewhere)})" if elsewhere else " (no copy found under /etc/kubernetes)"
    fix = [f"mv {elsewhere[0]} {manifest(p.process)} on {node}"] if elsewhere else []
    return Finding(
        "critical",
        component,
        f"{p.process} is not running: its static-pod manifest is not in {MANIFESTS}",
        f"kubelet stops a static pod whose manifest leaves {MANIFESTS}{found}; {effect}",
        (ev,),
        (
            *fix,
            f"kubelet starts {p.process} within seconds of the manifest's return",
            f"restore {manifest(p.process)} from backup or `kubeadm init phase control-plane` if it is lost",
        ),
    )


def _crashing(component: str, node: str, p: ProcessState, ev: Evidence, effect: str) -> Finding:
    return Finding(
        "critical",
        component,
        f"{p.process} is not running",
        f"no {p.process} process on {node} (newest container: {p.container_state or 'none'}); "
        f"it is crashing or cannot start; {effect}",
        (ev,),
        (
            f"crictl ps -a --name '^{p.process}$' and crictl logs <id> on {node}: the last lines say why",
            "journalctl -u kubelet on the node for why kubelet does not start it",
        ),
    )
