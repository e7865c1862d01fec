"""A node cut off from the API server: kubelet runs, but the API server that answers everyone else gives it no
answer, so its heartbeats stop. The node controller then marks it NotReady, taints it `unreachable` and evicts each
pod when its toleration of that taint runs out: the diagnosis says when, pod by pod."""

from __future__ import annotations

from typing import Any

from chaoskit.components import apiserver
from chaoskit.components.node_lifecycle import DEFAULT_TOLERATION, UNREACHABLE, toleration_of
from chaoskit.diagnosers.kit.base import Assessed, Evidence, Finding
from chaoskit.diagnosers.kit.common import HttpAnswer, age, items
from chaoskit.diagnosers.kit.sources import Section
from chaoskit.diagnosers.kubelet.evidence import API_ERRORS, KubeletEvidence, KubeletParams, recent
from chaoskit.figures import seconds
from chaoskit.model.timeline import api_time

ANY_SERVER = f"https://<api-server>:{apiserver.PORT}"  # when kubelet.conf could not be read
NO_ANSWER = (7, 28)  # curl: refused (or no route), timed out: the path is cut, not the API server's TLS or auth


def reach_of(section: Section | None) -> tuple[str, HttpAnswer | None]:
    """The server kubelet dials and what it answered from inside the node; no answer at all when not collected."""
    if section is None or section.rc is None:
        return "", None
    first, _, rest = section.output.partition("\n")
    server = first.removeprefix("server ").strip() if first.startswith("server ") else ""
    return server, HttpAnswer.of(Section(rest if server else section.output, section.rc))


def evictable(pod: dict[str, Any]) -> bool:
    """Pods the node controller evicts: not a DaemonSet's (they tolerate the taint) nor a static pod's mirror."""
    meta = pod.get("metadata", {})
    owners = {o.get("kind") for o in meta.get("ownerReferences") or []}
    mirror = "kubernetes.io/config.mirror" in (meta.get("annotations") or {})
    return "DaemonSet" not in owners and not mirror and pod.get("status", {}).get("phase") in ("Pending", "Running")


def eviction_schedule(pods: list[dict[str, Any]], node: dict[str, Any], now: float) -> tuple[str, ...]:
    """Per pod on the lost node, when the node controller evicts it (or did), from the taint's time and its
    toleration; before the taint, how long after the taint it will be."""
    taint = next(
        (
            t
            for t in node.get("spec", {}).get("taints") or []
            if t.get("key") == UNREACHABLE and t.get("effect") == "NoExecute"
        ),
        None,
    )
    tainted_at = api_time(taint.get("timeAdded")) if taint else None
    lines = []
    for pod in sorted(pods, key=lambda p: str(p.get("metadata", {}).get("name"))):
        meta = pod.get("metadata", {})
        name = f"{meta.get('namespace')}/{meta.get('name')}"
        if not evictable(pod):
            continue
        deleted = api_time(meta.get("deletionTimestamp"))
        tolerated = toleration_of(pod)
        if deleted is not None:
            lines.append(f"{name}: evicted {seconds(now - deleted)} ago, Terminating until the node answers again")
        elif tolerated is None:
            lines.append(f"{name}: tolerates {UNREACHABLE} for ever: never evicted")
        elif tainted_at is None:
            lines.append(f"{name}: evicted {seconds(tolerated)} after the node is tainted {UNREACHABLE}")
        else:
            due = tainted_at + tolerated - now
            lines.append(
                f"{name}: evicted in {seconds(due)} (toleration {seconds(tolerated)})"
                if due > 0
                else f"{name}: eviction due {seconds(-due)} ago (toleration {seconds(tolerated)})"
            )
    return tuple(lines)


def partition(p: KubeletParams, ev: KubeletEvidence) -> Assessed:
    """kubelet runs and the API server answers us, but not the node: the node is partitioned from it."""
    server, reach = reach_of(ev.api_reach)
    where = f"curl {server or 'the API server'}/livez from {ev.node}, as kubelet dials it (kubelet.conf)"
    lines = recent(p, ev, *API_ERRORS)
    e = Evidence(
        "api-reach",
        where,
        {"server": server or None, "answer": None if reach is None else reach.describe()},
        log_lines=lines,
    )
    cut = reach is not None and not reach.answered and reach.curl_rc in NO_ANSWER
    if not cut or ev.service != "active" or not ev.node_obj.ok:
        return Assessed(e)  # answered, not asked, or kubelet itself is down: the other checks say so
    renewed = age((ev.lease.data.get("spec") or {}).get("renewTime"), ev.collected_at) if ev.lease.ok else None
    schedule = eviction_schedule(items(ev.pods) if ev.pods else [], ev.node_obj.data, ev.collected_at)
    pods = Evidence(
        "evictions",
        f"GET /api/v1/pods?fieldSelector=spec.nodeName={ev.node}; the node's {UNREACHABLE} taint",
        {"pods_waiting": len(schedule)},
        log_lines=schedule,
    )
    heartbeat = "" if renewed is None else f"; its heartbeat lease was last renewed {seconds(renewed)} ago"
    return Assessed(
        e,
        (
            Finding(
                "critical",
                "kubelet",
                f"Node {ev.node} is cut off from the API server: kubelet runs, but {server or 'the API server'} gives "
                f"it {reach.describe() if reach else 'no answer'}{heartbeat}",
                "a network partition between the node and the control plane (a firewall rule, a route, the link): "
                "the API server answers others but not this node, so kubelet can neither renew its lease nor post "
                "status, and kube-proxy there gets no updates; the node controller marks it NotReady after its "
                f"node-monitor grace period, taints it {UNREACHABLE}, and evicts each pod when its toleration runs "
                f"out ({DEFAULT_TOLERATION} s unless the pod says otherwise)",
                (e, pods),
                (
                    f"from {ev.node}: curl -k {server or ANY_SERVER}/livez, then nft list ruleset, "
                    "iptables-save, ip route: what drops the traffic",
                    "its pods are replaced elsewhere only after their toleration: set a shorter tolerationSeconds "
                    f"for {UNREACHABLE} where failover must be fast",
                ),
            ),
        ),
    )
