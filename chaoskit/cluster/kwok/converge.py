"""The cluster holds exactly N simulated nodes: made, removed and waited for through the API (the Kube seam).

N > 0: first the DaemonSets that tolerate every taint are kept off simulated nodes (before any exists, so none of
their pods is ever placed there), then kwok's controller is applied, the missing nodes created, the extra ones
deleted, and the N waited for until Ready. N = 0: the nodes are deleted, then the controller. The DaemonSets keep
their affinity: it matches every real node, and taking it out would restart all their pods once more.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chaoskit.cluster.images import KWOK_IMAGE
from chaoskit.cluster.kwok import controller
from chaoskit.cluster.kwok.daemonsets import affinity_patch, to_patch
from chaoskit.cluster.kwok.nodes import fake_node, index_of, node_name
from chaoskit.model.kwok import SIMULATED_SELECTOR, is_simulated
from chaoskit.seams.kube import Conflict, Kube, KubeError, Obj, condition, object_path

NODES = "/api/v1/nodes"
DAEMONSETS = "/apis/apps/v1/daemonsets"
READY_TIMEOUT = 180.0  # kwok's pod starts (its image already loaded), lists its nodes and reports each Ready
PATCH_TRIES = 3  # a DaemonSet changed between our read and our patch is read again

Say = Callable[[str], None]


@dataclass(frozen=True)
class Converged:
    count: int
    created: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    patched: tuple[str, ...] = ()  # DaemonSets given the affinity, namespace/name
    elsewhere: tuple[str, ...] = ()  # others' DaemonSets whose pods kwok will report Running on simulated nodes
    controller: str = "absent"  # "applied", "removed" or "absent"

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items()}


def sorted_by_index(names: list[str]) -> list[str]:
    """Simulated nodes' names in their index order (kwok-node-2 before kwok-node-10), any other name last."""
    return sorted(names, key=lambda n: (index_of(n) is None, index_of(n) or 0, n))


def simulated_names(kube: Kube) -> list[str]:
    return sorted_by_index([n["metadata"]["name"] for n in kube.get(NODES, labelSelector=SIMULATED_SELECTOR)["items"]])


def _ref(ds: Obj) -> str:
    return f"{ds['metadata']['namespace']}/{ds['metadata']['name']}"


def _ds_path(ref: str) -> str:
    namespace, name = ref.split("/", 1)
    return f"/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}"


def keep_daemonsets_off(kube: Kube) -> tuple[list[str], list[str]]:
    """(the cluster's and chaoskit's DaemonSets patched now, others' DaemonSets that will land on simulated nodes)."""
    ours, elsewhere = to_patch(kube.get(DAEMONSETS)["items"])
    patched = []
    for ref in (_ref(d) for d in ours):
        for attempt in range(PATCH_TRIES):
            patch = affinity_patch(kube.get(_ds_path(ref)))
            if patch is None:
                break
            try:
                kube.patch(_ds_path(ref), patch)
            except Conflict:
                if attempt == PATCH_TRIES - 1:
                    raise
                continue
            patched.append(ref)
            break
    return patched, [_ref(d) for d in elsewhere]


def _create(kube: Kube, index: int) -> bool:
    """Make simulated node `index`; False when it was there already. A real node of that name is an error."""
    try:
        kube.create(NODES, fake_node(index))
    except Conflict:
        if not is_simulated(kube.get(f"{NODES}/{node_name(index)}")):
            raise KubeError(f"node {node_name(index)} exists and is not a simulated one: left as it is") from None
        return False
    return True


def not_ready(kube: Kube, names: list[str]) -> list[str]:
    """Of the simulated nodes `names`, those kwok has not reported Ready (yet)."""
    ready = {
        n["metadata"]["name"]
        for n in kube.get(NODES, labelSelector=SIMULATED_SELECTOR)["items"]
        if condition(n, "Ready")
    }
    return [n for n in names if n not in ready]


def controller_ready(kube: Kube) -> bool:
    """kwok's Deployment has its current pod available (a pod of the previous template does not count)."""
    dep = kube.find(controller.DEPLOYMENT_PATH) or {}
    st = dep.get("status") or {}
    current = st.get("observedGeneration", 0) >= (dep.get("metadata") or {}).get("generation", 1)
    return bool(current and st.get("updatedReplicas", 0) >= 1 and st.get("availableReplicas", 0) >= 1)


def _remove_controller(kube: Kube) -> bool:
    gone = False
    for obj in reversed(controller.objects()):
        path = object_path(obj)
        if kube.find(path) is not None:
            kube.delete(path, propagation="Background")
            gone = True
    return gone


def converge(
    kube: Kube,
    count: int,
    *,
    image: str = KWOK_IMAGE,
    image_id: str = "",
    timeout: float = READY_TIMEOUT,
    say: Say = lambda _: None,
) -> Converged:
    """Make the cluster hold exactly `count` simulated nodes (kwok-node-0 to count-1), Ready, and say what changed."""
    present = simulated_names(kube)
    wanted = [node_name(i) for i in range(count)]
    extra = [n for n in present if n not in wanted]
    if count == 0:
        for name in extra:
            kube.delete(f"{NODES}/{name}", propagation="Background")
        removed = _remove_controller(kube)
        return Converged(0, deleted=tuple(extra), controller="removed" if removed else "absent")
    patched, elsewhere = keep_daemonsets_off(kube)
    if patched:
        say(f"kept off simulated nodes (node affinity: type NotIn kwok): DaemonSets {', '.join(patched)}")
    if elsewhere:
        say(
            f"left as they are, these tolerate every taint: kwok will show their pods Running on simulated nodes: "
            f"DaemonSets {', '.join(elsewhere)}"
        )
    for obj in controller.objects(image, image_id):
        kube.apply(obj)
    created = [name for i, name in enumerate(wanted) if name not in present and _create(kube, i)]
    for name in extra:
        kube.delete(f"{NODES}/{name}", propagation="Background")
    logs = f"kubectl -n {controller.NAMESPACE} logs deploy/{controller.NAME}"
    kube.wait(f"kwok's controller to be available ({logs})", lambda: controller_ready(kube), timeout, interval=2)
    kube.wait(f"{count} simulated nodes Ready ({logs})", lambda: not not_ready(kube, wanted), timeout, interval=2)
    return Converged(count, tuple(created), tuple(extra), tuple(patched), tuple(elsewhere), "applied")
