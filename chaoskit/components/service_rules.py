"""What a node's Service rules should hold by the API (Services and their EndpointSlices) against what they hold:
the ClusterIP ports and endpoints as targets, and their difference. Pure: it reads objects already fetched."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from chaoskit.components.kube_proxy import Target


@dataclass(frozen=True)
class RuleDiff:
    """The node's rules against the API: what should be programmed, what is, and what differs."""

    want_services: dict[Target, str]  # ClusterIP ports with a ready endpoint -> "ns/name:port"
    have_services: set[Target]
    want_endpoints: set[Target]  # ready endpoints
    allowed_endpoints: set[Target]  # ready, or serving while terminating
    have_endpoints: set[Target]

    @property
    def missing_services(self) -> list[Target]:
        return sorted(self.want_services.keys() - self.have_services)

    @property
    def missing_endpoints(self) -> list[Target]:
        return sorted(self.want_endpoints - self.have_endpoints)

    @property
    def stale(self) -> list[Target]:
        return sorted(self.have_endpoints - self.allowed_endpoints)

    @property
    def in_step(self) -> bool:
        return not (self.missing_services or self.missing_endpoints or self.stale)

    @property
    def wiped(self) -> bool:
        """No Service the node should route has a rule: a flushed table, never a sync under way."""
        return bool(self.want_services) and len(self.missing_services) == len(self.want_services)


def at(target: Target) -> str:
    ip, proto, port = target
    return f"{ip}:{port}/{proto}"


def expected(
    services: list[dict[str, Any]], slices: list[dict[str, Any]], node: str
) -> tuple[dict[Target, str], set[Target], set[Target]]:
    """From the API: Service ports with a ready endpoint (→ "ns/name:port"), the ready endpoints the rules should
    reach, and every endpoint the rules may still reach (ready or serving while terminating)."""
    by_service: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for sl in slices:
        if sl.get("addressType") != "IPv4":
            continue
        meta = sl.get("metadata", {})
        name = (meta.get("labels") or {}).get("kubernetes.io/service-name")
        if name:
            by_service.setdefault((meta.get("namespace", ""), name), []).append(sl)
    want_services: dict[Target, str] = {}
    ready: set[Target] = set()
    allowed: set[Target] = set()
    for svc in services:
        meta, spec = svc.get("metadata", {}), svc.get("spec", {})
        ip = spec.get("clusterIP") or ""
        if spec.get("type") == "ExternalName" or not re.fullmatch(r"[\d.]+", ip):
            continue  # headless or IPv6: no ClusterIP rule in the IPv4 table
        local_only = spec.get("internalTrafficPolicy") == "Local"
        for port in spec.get("ports") or []:
            port_name, proto = port.get("name") or "", str(port.get("protocol", "TCP")).lower()
            endpoints_ready = False
            for sl in by_service.get((meta.get("namespace", ""), meta.get("name", "")), []):
                target = next(
                    (p.get("port") for p in sl.get("ports") or [] if (p.get("name") or "") == port_name), None
                )
                if target is None:
                    continue
                for ep in sl.get("endpoints") or []:
                    cond = ep.get("conditions") or {}
                    if local_only and ep.get("nodeName") != node:
                        continue
                    for addr in ep.get("addresses") or []:
                        if cond.get("ready", True):
                            ready.add((addr, proto, int(target)))
                            endpoints_ready = True
                        if cond.get("ready", True) or cond.get("serving"):
                            allowed.add((addr, proto, int(target)))
            if endpoints_ready:
                key = (ip, proto, int(port.get("port", 0)))
                label = port_name or port.get("port")
                want_services[key] = f"{meta.get('namespace', '')}/{meta.get('name', '')}:{label}"
    return want_services, ready, allowed
