"""A control plane chaoskit cannot reach (a managed cluster, or `chaoskit install --nodes workers`): what the API
server shows of itself stands in for the node-local look, and the rest is said to be out of reach, not failed.

A diagnoser's node script for such a node is answered here instead of on the node: a GET of the API server's own
endpoints (`/readyz?verbose`, `/livez?verbose`, `/metrics`) goes through the API with the kubeconfig's
credentials, a window between two scrapes is waited out here, and every other command (the process, its manifest,
its logs, etcd's own port) comes back not run, with the reason. The judgement afterwards is the diagnosers' own.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

from chaoskit.components import apiserver
from chaoskit.diagnosers.kit.base import UNCOLLECTED, ComponentReport, Finding, by_severity, status_of
from chaoskit.diagnosers.kit.sources import Section
from chaoskit.seams.kube import Kube, KubeError
from chaoskit.seams.nodeexec import CONTROL_PLANE_LABEL, Node
from chaoskit.seams.shell import Asks

MANAGED = "control-plane (managed)"  # the subject of its reports when the control plane is no node of the cluster
OUT_OF_REACH = "no chaoskit agent on this node (a managed control plane): node-local evidence is out of reach"
_HTTP_MARK = "@@http "


def control_plane_of(kube: Kube, nodes: Sequence[Node]) -> tuple[str, frozenset[str]]:
    """The control-plane node to diagnose among the nodes chaoskit reaches, and the nodes out of its reach: none,
    or the control plane when no agent runs there (then named as the API lists it, or MANAGED when it is no node)."""
    reached = next((n.name for n in nodes if n.role == "control-plane"), None)
    if reached is not None:
        return reached, frozenset()
    try:
        listed = kube.get("/api/v1/nodes", labelSelector=CONTROL_PLANE_LABEL)["items"]
    except KubeError:
        listed = []
    name = str(listed[0]["metadata"]["name"]) if listed else MANAGED
    return name, frozenset({name})


def through_api(kube: Kube, commands: Mapping[str, str], chains: Sequence[Sequence[str]]) -> dict[str, Section]:
    """The sections of a node script for a node chaoskit cannot reach: what the API server answers, the rest not
    run. Chains (windows between scrapes) run in order, side by side with the rest."""
    found: dict[str, Section] = {}
    chained = {name for chain in chains for name in chain}
    jobs: list[Sequence[str]] = [*chains, *([n] for n in commands if n not in chained)]

    def run(job: Sequence[str]) -> None:
        started = time.monotonic()
        for name in job:
            found[name] = _one(kube, commands[name], started)
            if found[name].rc != 0:  # as on a node: a chain stops at its first failure
                for later in job[job.index(name) + 1 :]:
                    found[later] = Section(f"skipped: {name} failed", None)
                return

    threads = [threading.Thread(target=run, args=(job,), daemon=True) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {name: found.get(name, Section(OUT_OF_REACH, None)) for name in commands}


def _one(kube: Kube, command: str, chain_start: float) -> Section:
    """One command as the API answers it: what it asks is in the line itself when a helper made it (`Asks`)."""
    asks = command if isinstance(command, Asks) else Asks(command)
    if asks.wait_s is not None:  # window_wait: the window waited out here
        time.sleep(max(0.0, chain_start + asks.wait_s - time.monotonic()))
        return Section("", 0)
    if not asks.url.startswith(f"{apiserver.URL}/"):
        return Section(OUT_OF_REACH, None)
    path = asks.url[len(apiserver.URL) :]
    try:
        body = kube.raw(path)
    except KubeError as exc:
        if exc.status is None:  # nothing answered: as curl says it
            return Section(f"curl: (7) {exc}\n{_HTTP_MARK}000" if asks.http else str(exc), 7)
        return Section(f"{exc}\n{_HTTP_MARK}{exc.status}", 0) if asks.http else Section(str(exc), 22)
    if asks.http:  # http_command: the body, then the status on a line of its own
        return Section(f"{body}\n{_HTTP_MARK}200", 0)
    keep = re.compile(asks.families) if asks.families else None  # scrape_command: only the wanted families
    return Section("\n".join(line for line in body.splitlines() if keep is None or keep.match(line)), 0)


def out_of_reach_noted(report: ComponentReport) -> ComponentReport:
    """The report with its "could not look" warnings about node-local evidence out of reach turned into notes: on a
    managed control plane they are how things are, not a verdict (the API-side checks still judge)."""
    findings = tuple(_noted(f) for f in report.findings)
    if findings == report.findings:
        return report
    ordered = by_severity(findings)
    return replace(report, findings=ordered, status=status_of(ordered))


def _noted(f: Finding) -> Finding:
    if f.title != UNCOLLECTED or "managed control plane" not in f.probable_cause:
        return f
    return replace(f, severity="info", title="Node-local evidence out of reach (managed control plane)")
