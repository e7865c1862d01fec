"""Safe by default: chaoskit breaks only a kind cluster it built or a cluster it was installed in, and one run per
component at a time.

`cluster up` leaves a marker ConfigMap (kube-system/chaoskit-cluster), `chaoskit install` its agents; a run refuses
a cluster with neither (or without kind node containers of that name) unless told --allow-any-cluster.
Per-component locks are Leases in kube-system whose duration covers the fault's dead-man deadline, so a killed
run's lock expires.
"""

from __future__ import annotations

import platform
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from chaoskit import figures
from chaoskit.cluster.install import NAMESPACE
from chaoskit.cluster.marker import MARKER
from chaoskit.errors import ToolError, UsageError
from chaoskit.seams.kube import Conflict, Kube, KubeError, Obj
from chaoskit.seams.nodeexec import DockerNodeExec
from chaoskit.seams.shell import Runner

LOCK_PREFIX = "chaoskit-lock-"
INSTALLED = f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/chaoskit-agent"  # what `chaoskit install` leaves


class NotOurCluster(UsageError):
    pass


class Locked(ToolError):
    pass


def recognise(runner: Runner, kube: Kube, cluster: str) -> None:
    """Raise NotOurCluster unless chaoskit is installed in the cluster (`chaoskit install`: the explicit opt-in) or
    `cluster` is a kind cluster with chaoskit's marker."""
    if kube.find(INSTALLED) is not None:
        return
    if not DockerNodeExec(runner, cluster).list_nodes():
        raise NotOurCluster(
            f"no kind node containers for cluster {cluster!r}: chaoskit only injects into kind clusters it built "
            "(chaoskit cluster up) or clusters it is installed in (chaoskit install), unless given --allow-any-cluster"
        )
    if kube.find(f"/api/v1/namespaces/kube-system/configmaps/{MARKER}") is None:
        raise NotOurCluster(
            f"cluster {cluster!r} has no kube-system/{MARKER} ConfigMap: `chaoskit cluster up` did not build "
            "it; pass --allow-any-cluster to use it anyway"
        )


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class Lock:
    component: str
    holder: str

    @property
    def path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{LOCK_PREFIX}{self.component}"


def holder_id(run_id: str) -> str:
    return f"{platform.node()}/{run_id}"  # uname's node name, what gethostname() answers on Linux


def acquire(kube: Kube, component: str, holder: str, seconds: float) -> Lock:
    """Take the component's lease for `seconds`; Locked if another live run holds it."""
    lock = Lock(component, holder)
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": f"{LOCK_PREFIX}{component}", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": max(1, round(seconds)),
            "acquireTime": _now(),
            "renewTime": _now(),
        },
    }
    for _ in range(10):
        try:
            kube.create(lock.path.rsplit("/", 1)[0], body)
            return lock
        except Conflict:
            pass  # taken: whose, and since when, is read next
        current = kube.find(lock.path)
        if current is not None:
            break
        time.sleep(0.2)  # released between our create and our read: try the create again
    else:
        raise Locked(f"could not take the {component} lock: it keeps appearing and vanishing")
    if taken := _taken(component, current, holder):
        raise Locked(taken)
    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]  # type: ignore[index]
    kube.request("PUT", lock.path, body)  # a stale lease: take it over (409 here means we lost a race)
    return lock


def _taken(component: str, lease: Obj, holder: str) -> str:
    """Why `holder` cannot have the component's lease: another run holds it and it has not expired; "" if it can."""
    spec = lease.get("spec", {})
    renewed = datetime.strptime(spec.get("renewTime", _now()), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    expires = renewed.timestamp() + float(spec.get("leaseDurationSeconds", 0))
    if spec.get("holderIdentity") in (None, "", holder) or expires <= time.time():
        return ""
    return (
        f"{component} is being broken by another run ({spec.get('holderIdentity')}) for "
        f"{figures.seconds(expires - time.time())} more; two runs cannot inject into the same component at once"
    )


def check_free(kube: Kube, components: list[str], holder: str) -> None:
    """Locked now if another run holds any of these components: a run checks before it deploys anything, and still
    takes each lease when its step comes."""
    for component in components:
        lease = kube.find(Lock(component, holder).path)
        if lease is not None and (taken := _taken(component, lease, holder)):
            raise Locked(taken)


def preflight(runner: Runner, kube: Kube, cluster: str, locks: list[str], *, allow_any_cluster: bool) -> None:
    """What a run checks before it touches anything, asked by a dry run too, so that a dry run that exits 0 promises
    the run will start: the cluster recognised (unless --allow-any-cluster), and none of `locks` held by another run."""
    if not allow_any_cluster:
        recognise(runner, kube, cluster)
    check_free(kube, sorted(set(locks)), holder_id("dry-run"))


def release(kube: Kube, lock: Lock) -> None:
    try:
        current = kube.get(lock.path)
        if current.get("spec", {}).get("holderIdentity") == lock.holder:
            kube.delete(lock.path, propagation="Background")  # gone at once: the next step may take it
    except KubeError:
        pass  # the API server may be the broken component; the lease expires on its own


def release_run_locks(kube: Kube, holder: str, components: list[str]) -> None:
    """Release the locks a (killed) run held (as `holder`), once its injections are reverted."""
    for component in components:
        release(kube, Lock(component, holder))
