"""Recovery is the component doing its work again: a `*.down` fault recovers when the process running now holds its
leader lease (and, for the scheduler, binds a probe pod), never when /healthz first answers; a revoked permission when
the controller does its duty again, not when the authorizer first says yes."""

from __future__ import annotations

import time
from typing import Any

import pytest

from chaoskit.components import controller_manager, scheduler
from chaoskit.env import Env
from chaoskit.errors import ToolError
from chaoskit.faults.apiserver.admission import CONFIGS, REFUSED, AdmissionWebhookFailing, WebhookParams
from chaoskit.faults.apiserver.admission import NAME as WEBHOOK_FAULT
from chaoskit.faults.base import FaultPlan
from chaoskit.faults.control_plane import StaticPodDown
from chaoskit.faults.controller_manager.down import ControllerManagerDown
from chaoskit.faults.controller_manager.permission import COLLECTIONS, PODS, SLICES, PermissionParams, PermissionRevoked
from chaoskit.faults.scheduler import DOWN_PROBE, PROBE_NAMESPACE, SchedulerDown
from chaoskit.seams.kube import FakeKube, NotFound
from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.seams.shell import Completed, FakeRunner

CP = "chaoskit-control-plane"
CP_NODE = Node(CP, "control-plane")


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(t))


def lease(acquired: float, renewed: float) -> dict[str, Any]:
    spec = {"holderIdentity": f"{CP}_abc", "acquireTime": iso(acquired), "renewTime": iso(renewed)}
    return {"metadata": {"name": "lease"}, "spec": {**spec, "leaseDurationSeconds": 15}}


def node_answering(process: str, started_s_ago: int | None, healthy: bool = True) -> FakeNodeExec:
    """A control-plane node whose `process` started `started_s_ago` (None: not running), /healthz ok or not."""

    def answer(argv: tuple[str, ...]) -> Completed | None:
        if "ps" in argv:
            running = started_s_ago is not None
            return Completed(argv, 0 if running else 1, f"  {started_s_ago}\n" if running else "")
        if "curl" in argv:
            return Completed(argv, 0 if healthy else 7, "ok" if healthy else "")
        return None

    return FakeNodeExec(FakeRunner(responder=answer))


FAULTS = [(ControllerManagerDown(), controller_manager.LEASE), (SchedulerDown(), scheduler.LEASE)]


def _env(kube: FakeKube, nodes: FakeNodeExec) -> Env:
    return Env(kube=kube, nodes=nodes, cluster="chaoskit")


def _plan(fault: StaticPodDown) -> FaultPlan:
    return fault.plan(CP_NODE, fault.Params())


@pytest.mark.parametrize(("fault", "path"), FAULTS, ids=lambda f: getattr(f, "name", ""))
def test_healthz_alone_is_not_recovery_while_the_lease_is_the_stopped_process(fault: StaticPodDown, path: str) -> None:
    now = time.time()
    # the new process answers /healthz, started 3 s ago; the lease was acquired an hour ago by the one stopped
    kube = FakeKube({path: lease(now - 3600, now - 40)})
    assert fault.recovered(_env(kube, node_answering(fault.process, 3)), _plan(fault)) is False


@pytest.mark.parametrize(("fault", "path"), FAULTS, ids=lambda f: getattr(f, "name", ""))
def test_a_lease_acquired_and_renewed_by_the_process_running_now_is_recovery(fault: StaticPodDown, path: str) -> None:
    now = time.time()
    kube = FakeKube({path: lease(now - 2, now - 1)})
    nodes = node_answering(fault.process, 3)
    if isinstance(fault, SchedulerDown):  # it binds the probe at once
        bound = _binding(kube)
        kube.apply = bound  # type: ignore[method-assign]
    assert fault.recovered(_env(kube, nodes), _plan(fault)) is True


@pytest.mark.parametrize(("fault", "path"), FAULTS, ids=lambda f: getattr(f, "name", ""))
def test_a_lease_the_new_process_took_but_no_longer_renews_is_not_recovery(fault: StaticPodDown, path: str) -> None:
    now = time.time()
    kube = FakeKube({path: lease(now - 30, now - 12)})  # renewed 12 s ago: past half its 15 s
    assert fault.recovered(_env(kube, node_answering(fault.process, 40)), _plan(fault)) is False


def test_no_process_running_is_not_recovery() -> None:
    now = time.time()
    fault = ControllerManagerDown()
    kube = FakeKube({controller_manager.LEASE: lease(now - 2, now - 1)})
    assert fault.recovered(_env(kube, node_answering(fault.process, None)), _plan(fault)) is False


def test_a_scheduler_that_leads_but_binds_no_probe_pod_has_not_recovered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("chaoskit.faults.scheduler.PROBE_BIND_S", 0.2)
    now = time.time()
    kube = FakeKube({scheduler.LEASE: lease(now - 2, now - 1)})
    assert SchedulerDown().recovered(_env(kube, node_answering("kube-scheduler", 3)), _plan(SchedulerDown())) is False
    probe = f"/api/v1/namespaces/{PROBE_NAMESPACE}/pods/{DOWN_PROBE}"
    assert any(m not in ("GET", "DELETE") and "/pods" in p for m, p in kube.calls)  # asked of a probe it made
    assert probe not in kube.objects  # and gone once asked: nothing of it outlives the look


def _binding(kube: FakeKube) -> Any:
    """kube.apply as a working scheduler answers it: the pod is bound to a node at once."""
    apply = kube.apply

    def bound(obj: dict[str, Any]) -> Any:
        obj = {**obj, "spec": {**obj["spec"], "nodeName": "chaoskit-worker"}}
        return apply(obj)

    return bound


class Cluster(FakeKube):
    """The API server as the controller manager's controllers meet it: the authorizer allows (or not), and a
    working controller acts at once on what is made for it (or a refused one does nothing)."""

    def __init__(self, allowed: bool, working: bool) -> None:
        super().__init__()
        self.allowed, self.working = allowed, working

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        if path.endswith("/subjectaccessreviews"):
            return {**body, "status": {"allowed": self.allowed}}
        made = super().request(method, path, body, query)
        if method != "POST" or not self.working:
            return made
        meta = made["metadata"]
        made["metadata"] = meta = {**meta, "uid": f"uid-{meta['name']}"}
        self.objects[f"{path}/{meta['name']}"] = made
        owner = [{"uid": meta["uid"]}]
        child = {"metadata": {"name": f"{meta['name']}-x", "labels": {"app": "chaoskit-duty-probe"}}}
        if made["kind"] == "ReplicaSet":
            self.objects[f"{PODS}/{meta['name']}-x"] = {
                **child,
                "metadata": {**child["metadata"], "ownerReferences": owner},
            }
        elif made["kind"] == "Deployment":
            rs = f"{COLLECTIONS['ReplicaSet']}/{meta['name']}-x"
            self.objects[rs] = {**child, "metadata": {**child["metadata"], "ownerReferences": owner}}
        elif made["kind"] == "Service":
            labels = {"kubernetes.io/service-name": meta["name"]}
            self.objects[f"{SLICES}/{meta['name']}-x"] = {"metadata": {"name": f"{meta['name']}-x", "labels": labels}}
        elif made["kind"] == "HorizontalPodAutoscaler":
            target = f"{COLLECTIONS['Deployment']}/{made['spec']['scaleTargetRef']['name']}"
            self.objects[target]["spec"]["replicas"] = made["spec"]["minReplicas"]
        return made


CONTROLLERS = ["replicaset", "deployment", "endpointslice", "horizontal-pod-autoscaler"]


def _revoked(controller: str) -> FaultPlan:
    return PermissionRevoked().plan(CP_NODE, PermissionParams(controller=controller))  # type: ignore[arg-type]


@pytest.mark.parametrize("controller", CONTROLLERS)
def test_a_controller_doing_its_duty_again_is_recovery_and_its_probe_goes(controller: str) -> None:
    kube = Cluster(allowed=True, working=True)
    assert PermissionRevoked().recovered(_env(kube, FakeNodeExec()), _revoked(controller)) is True
    made = [p for p in kube.objects if any(p.startswith(c) for c in COLLECTIONS.values())]
    assert not [p for p in made if "duty-probe" in p and "-x" not in p]  # the probes went with the look


@pytest.mark.parametrize("controller", CONTROLLERS)
def test_the_authorizers_yes_alone_is_not_recovery(controller: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("chaoskit.faults.controller_manager.permission.DUTY_WAIT_S", {})
    monkeypatch.setattr("chaoskit.faults.controller_manager.permission.DUTY_WAIT_DEFAULT_S", 0.2)
    kube = Cluster(allowed=True, working=False)  # allowed, yet the controller's requests do not go through
    assert PermissionRevoked().recovered(_env(kube, FakeNodeExec()), _revoked(controller)) is False


def test_a_refused_controller_is_not_asked_to_work() -> None:
    kube = Cluster(allowed=False, working=True)
    assert PermissionRevoked().recovered(_env(kube, FakeNodeExec()), _revoked("replicaset")) is False
    assert not [c for c in kube.calls if c[0] != "POST"]  # the SubjectAccessReview alone


class Admission(FakeKube):
    """The API server's admission chain for a dry-run pod: refused while the webhook is called, 404 without the
    namespace."""

    def __init__(self, objects: dict[str, Any], refusing: bool) -> None:
        super().__init__(objects)
        self.refusing = refusing

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        if method == "POST" and path.endswith("/pods"):
            if path.rsplit("/", 1)[0] not in self.objects:
                raise NotFound(f"POST {path}: HTTP 404 Not Found: namespaces not found")
            if self.refusing:
                raise ToolError(f'POST {path}: HTTP 500: {REFUSED} "refuse-pods.chaoskit.dev": no endpoints')
        return super().request(method, path, body, query)


WEBHOOK_NS = "/api/v1/namespaces/chaoskit-webhook"
OUR_CONFIG = {
    f"{CONFIGS}/chaoskit-failing-webhook": {
        "metadata": {"name": "chaoskit-failing-webhook", "labels": {"chaoskit.dev/fault": WEBHOOK_FAULT}}
    }
}


@pytest.mark.parametrize(
    ("objects", "refusing", "recovered"),
    [
        ({WEBHOOK_NS: {"metadata": {}}}, True, False),  # the namespace stands and the webhook refuses
        ({WEBHOOK_NS: {"metadata": {}}}, False, True),  # admitted
        (OUR_CONFIG, True, False),  # the namespace gone, the configuration still there for a namespace made again
        ({WEBHOOK_NS: {"metadata": {"deletionTimestamp": "x"}}}, False, False),  # terminating: asked again later
        ({}, False, True),  # gone, and nothing of the fault's left
    ],
    ids=["refused", "admitted", "config-left", "terminating", "all-gone"],
)
def test_a_failing_webhook_recovers_when_pods_are_admitted_not_when_its_namespace_is_gone(
    objects: dict[str, Any], refusing: bool, recovered: bool
) -> None:
    fault = AdmissionWebhookFailing()
    kube = Admission(objects, refusing)
    if "deletionTimestamp" in str(objects):  # the API server refuses new content in a terminating namespace
        kube.refusing = False
        kube.request = _terminating(kube.request)  # type: ignore[method-assign]
    plan = fault.plan(CP_NODE, WebhookParams())
    assert fault.recovered(_env(kube, FakeNodeExec()), plan) is recovered


def _terminating(request: Any) -> Any:
    def answer(method: str, path: str, body: Any = None, query: Any = None) -> Any:
        if method == "POST" and path.endswith("/pods"):
            raise ToolError(f"POST {path}: HTTP 403: unable to create new content: it is being terminated")
        return request(method, path, body, query)

    return answer
