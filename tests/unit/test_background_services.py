"""Background Services for rule-sync at scale: the objects, their growth and shrinking, and the wait that reads
kube-proxy's work in each node."""

from __future__ import annotations

from typing import Any

import pytest

from chaoskit.components.kube_proxy import service_rule_count
from chaoskit.errors import ToolError
from chaoskit.measurements import background_services as bg
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.seams.shell import Completed, FakeRunner


class UidKube(FakeKube):
    """The fake API, giving each created object a uid as the API server does."""

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        if method == "POST":
            body = {**body, "metadata": {**body["metadata"], "uid": f"uid-{len(self.objects)}"}}
        return super().request(method, path, body, query)


def test_every_endpoint_is_a_distinct_benchmark_address() -> None:
    ips = {bg.endpoint_ip(s, e, 3) for s in range(1000) for e in range(3)}
    assert len(ips) == 3000
    assert all(ip.startswith("198.18.") or ip.startswith("198.19.") for ip in ips)


def test_a_background_service_is_selectorless_and_its_slice_is_chaoskit_s_and_owned_by_it() -> None:
    service, endpoint_slice = bg.manifests("chaoskit-background-x", 7, 2, "x")
    assert "selector" not in service["spec"]
    labels = endpoint_slice["metadata"]["labels"]
    assert labels["kubernetes.io/service-name"] == "bg-00007"
    assert labels["endpointslice.kubernetes.io/managed-by"] == "chaoskit", "the controller must leave it alone"
    assert len(endpoint_slice["endpoints"]) == 2
    owned = bg.owned_by(endpoint_slice, {"metadata": {"name": "bg-00007", "uid": "u-1"}})
    assert owned["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Service", "name": "bg-00007", "uid": "u-1"}
    ]


def test_they_grow_and_shrink_in_place_and_go_with_their_namespace() -> None:
    kube = UidKube()
    services = bg.BackgroundServices(kube, run="r1", workers=2)
    services.resize(5)
    ns = services.namespace
    assert sorted(p.rsplit("/", 1)[1] for p in kube.objects if "/services/" in p) == [
        bg.service_name(i) for i in range(5)
    ]
    slices = [o for p, o in kube.objects.items() if "/endpointslices/" in p]
    assert len(slices) == 5 and all(s["metadata"]["ownerReferences"][0]["uid"] for s in slices)
    services.resize(2)
    assert sorted(p.rsplit("/", 1)[1] for p in kube.objects if "/services/" in p) == ["bg-00000", "bg-00001"]
    assert services.count == 2
    services.remove(wait=False)
    assert f"/api/v1/namespaces/{ns}" not in kube.objects


def test_a_refused_request_fails_the_resize_with_the_api_s_words() -> None:
    kube = UidKube()
    services = bg.BackgroundServices(kube, run="r2", workers=1)
    services.resize(1)
    services.count = 0  # as if forgotten: the next create meets the existing one
    with pytest.raises(ToolError, match="1 background Service request"):
        services.resize(1)
    with pytest.raises(ToolError, match="between 0 and"):
        services.resize(bg.MAX_SERVICES + 1)


def test_programmed_means_each_node_s_rules_hold_exactly_that_many_of_the_namespace() -> None:
    counts = {"w1": iter(["3", "5"]), "w2": iter(["5"])}

    def responder(argv: tuple[str, ...]) -> Completed | None:
        return Completed(argv, 0, next(counts[argv[0]], "5") + "\n")

    nodes = FakeNodeExec(FakeRunner(responder=responder))
    done = bg.programmed_everywhere(
        nodes, [Node("w1", "worker"), Node("w2", "worker")], "ns", 5, timeout=5, interval=0.01
    )
    assert done["w1"] is not None and done["w2"] is not None
    assert all(call[-1] == service_rule_count("ns") for call in nodes.calls)
    stuck = FakeNodeExec(FakeRunner(responder=lambda argv: Completed(argv, 0, "4\n")))
    assert bg.programmed_everywhere(stuck, [Node("w1", "worker")], "ns", 5, timeout=0.05, interval=0.01) == {"w1": None}


def test_the_count_of_one_namespace_matches_its_own_entries_only() -> None:
    line = service_rule_count("ns")
    assert "': goto service-[A-Z0-9]*-ns/'" in line, "nftables: the map element's chain names the namespace"
    assert "'--comment \"?ns/'" in line, "iptables: the rule's comment names it"
