"""The Services of a bigger cluster, for kube-proxy to program: N selectorless Services in a namespace of their own,
each with an EndpointSlice chaoskit writes, pointing at addresses nobody answers at. No pod runs: kube-proxy
programs a Service and its endpoints from the API objects alone, so its rules grow as in a cluster of that many
Services, while the host runs nothing more.

The endpoints are in 198.18.0.0/15, the range RFC 2544 sets aside for benchmarks (131,072 addresses). Each slice
belongs to its Service (an ownerReference), so deleting a Service lets the garbage collector delete its slice, and
deleting the namespace removes them all.
"""

from __future__ import annotations

import ipaddress
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from chaoskit.components.kube_proxy import service_rules
from chaoskit.errors import ToolError
from chaoskit.seams.kube import Kube
from chaoskit.seams.nodeexec import Node, NodeExec

Obj = dict[str, Any]
BENCHMARK_NET = ipaddress.IPv4Network("198.18.0.0/15")  # RFC 2544: never anyone's address
MAX_SERVICES = 20_000  # the placeholder range holds 131,072 endpoints; the Service CIDR of kind, 65,536 ClusterIPs
PORT = 80
WORKERS = 8  # concurrent API requests: enough to keep a 2-core API server busy, few enough for its fairness limits
LABEL = "chaoskit.dev/background"  # on the namespace and every object: what `chaoskit` finds them by
NAMESPACE_PREFIX = "chaoskit-background-"
PROGRAM_TIMEOUT = 600.0  # kube-proxy's full syncs of 10,000 Services take seconds to minutes, per mode
DELETE_TIMEOUT = 900.0  # the namespace controller deletes 10,000 Services in a few minutes on this host


def endpoint_ip(service: int, endpoint: int, per_service: int) -> str:
    """The placeholder address of one Service's endpoint: distinct across every Service."""
    return str(BENCHMARK_NET.network_address + service * per_service + endpoint + 1)


def service_name(i: int) -> str:
    return f"bg-{i:05d}"


def manifests(namespace: str, i: int, per_service: int, run: str) -> tuple[Obj, Obj]:
    """Background Service `i` and its EndpointSlice (the slice's owner is filled in once the Service has a uid)."""
    name = service_name(i)
    labels = {"app.kubernetes.io/managed-by": "chaoskit", LABEL: run}
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"ports": [{"name": "http", "port": PORT, "protocol": "TCP"}]},  # no selector: we write the slice
    }
    # not the EndpointSlice controller's managed-by: it leaves a slice of another manager alone
    slice_labels = {**labels, "kubernetes.io/service-name": name, "endpointslice.kubernetes.io/managed-by": "chaoskit"}
    endpoint_slice = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "addressType": "IPv4",
        "metadata": {"name": name, "namespace": namespace, "labels": slice_labels},
        "ports": [{"name": "http", "port": PORT, "protocol": "TCP"}],
        "endpoints": [
            {"addresses": [endpoint_ip(i, e, per_service)], "conditions": {"ready": True}} for e in range(per_service)
        ],
    }
    return service, endpoint_slice


def owned_by(endpoint_slice: Obj, service: Obj) -> Obj:
    meta = service["metadata"]
    owner = {"apiVersion": "v1", "kind": "Service", "name": meta["name"], "uid": meta["uid"]}
    return {**endpoint_slice, "metadata": {**endpoint_slice["metadata"], "ownerReferences": [owner]}}


@dataclass
class BackgroundServices:
    """N background Services, grown and shrunk in place; `remove()` deletes their namespace."""

    kube: Kube
    endpoints_per_service: int = 1
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:6])
    workers: int = WORKERS
    count: int = 0  # Services that exist now
    created_namespace: bool = False

    @property
    def namespace(self) -> str:
        return f"{NAMESPACE_PREFIX}{self.run}"

    def _ensure_namespace(self) -> None:
        if self.created_namespace:
            return
        meta = {"name": self.namespace, "labels": {"chaoskit.dev/owned": "true", LABEL: self.run}}
        self.kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
        self.created_namespace = True

    def resize(self, n: int, say: Callable[[str], None] = lambda _: None) -> float:
        """Grow or shrink to exactly `n` Services; returns the seconds the API took to accept every request."""
        if not 0 <= n <= MAX_SERVICES:
            raise ToolError(f"{n} background Services: between 0 and {MAX_SERVICES}")
        started = time.monotonic()
        if n > self.count:
            self._ensure_namespace()
            say(f"creating {n - self.count} background Services in {self.namespace}")
            self._each(range(self.count, n), self._create)
        elif n < self.count:
            say(f"deleting {self.count - n} background Services from {self.namespace}")
            self._each(range(n, self.count), self._delete)
        self.count = n
        return time.monotonic() - started

    def _each(self, indexes: Iterable[int], act: Callable[[int], None]) -> None:
        errors: list[str] = []
        lock = threading.Lock()

        def guarded(i: int) -> None:
            try:
                act(i)
            except ToolError as exc:
                with lock:
                    errors.append(str(exc))

        with ThreadPoolExecutor(self.workers, thread_name_prefix="background-services") as pool:
            list(pool.map(guarded, indexes))
        if errors:
            raise ToolError(f"{len(errors)} background Service request(s) failed, the first: {errors[0]}")

    def _create(self, i: int) -> None:
        service, endpoint_slice = manifests(self.namespace, i, self.endpoints_per_service, self.run)
        made = self.kube.create(f"/api/v1/namespaces/{self.namespace}/services", service)
        self.kube.create(
            f"/apis/discovery.k8s.io/v1/namespaces/{self.namespace}/endpointslices", owned_by(endpoint_slice, made)
        )

    def _delete(self, i: int) -> None:
        # the slice goes with it: the garbage collector follows its ownerReference
        self.kube.delete(f"/api/v1/namespaces/{self.namespace}/services/{service_name(i)}", propagation="Background")

    def remove(self, timeout: float = DELETE_TIMEOUT, wait: bool = True) -> None:
        """Delete the namespace and everything in it; with `wait`, until the namespace is gone."""
        if not self.created_namespace:
            return
        path = f"/api/v1/namespaces/{self.namespace}"
        self.kube.delete(path, propagation="Background")
        self.count = 0
        if wait:
            self.kube.wait(f"namespace {self.namespace} deleted", lambda: self.kube.find(path) is None, timeout, 2.0)
        self.created_namespace = False


def programmed_everywhere(
    nodes: NodeExec, on: Sequence[Node], namespace: str, expected: int, timeout: float, interval: float = 2.0
) -> dict[str, float | None]:
    """Per node name, seconds until its rules held exactly `expected` Services of `namespace` (None: not within
    `timeout`). The count is kube-proxy's work read in the node, never the objects chaoskit wrote."""
    started = time.monotonic()
    done: dict[str, float | None] = dict.fromkeys(n.name for n in on)
    while True:
        for node in [n for n in on if done[n.name] is None]:
            if service_rules(nodes, node, namespace) == expected:
                done[node.name] = time.monotonic() - started
        if all(v is not None for v in done.values()) or time.monotonic() - started > timeout:
            return done
        time.sleep(interval)


def resize_and_wait(
    nodes: NodeExec,
    on: Sequence[Node],
    background: BackgroundServices,
    n: int,
    timeout: float = PROGRAM_TIMEOUT,
    say: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Resize `background` to `n` Services and wait until every node's kube-proxy programmed the change; returns
    how long the API took to accept the requests and each node's kube-proxy to program them after that."""
    accepted = background.resize(n, say)
    say(f"waiting for kube-proxy on {', '.join(node.name for node in on)} to hold {n} background Services")
    programmed = programmed_everywhere(nodes, on, background.namespace, n, timeout)
    return {"services": n, "namespace": background.namespace, "accepted_s": accepted, "programmed_s": programmed}
