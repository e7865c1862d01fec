"""controller-manager.permission-revoked's plan, and the controller manager diagnosis of its controllers'
permissions: a missing bootstrap binding is named with what the controller was refused; a refusal that the cluster's
RBAC grants again is history, one it still does not grant is current."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from diagnose_evidence import controller_manager

from chaoskit.components.rbac import logged_at, refusals
from chaoskit.diagnosers.controller_manager.permissions import permissions
from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.faults.controller_manager import PermissionParams, PermissionRevoked
from chaoskit.faults.controller_manager.permission import bootstrap_binding
from chaoskit.seams.nodeexec import Node

RS = "system:controller:replicaset-controller"
WHO = "system:serviceaccount:kube-system:replicaset-controller"


def klog(at: float, verb: str = "create", resource: str = "pods") -> str:
    t = datetime.fromtimestamp(at, UTC)
    return (
        f'E{t:%m%d %H:%M:%S}.000000       1 replica_set.go:560] "Unhandled Error" err="pods \\"web-1\\" is '
        f'forbidden: User \\"{WHO}\\" cannot {verb} resource \\"{resource}\\" in API group \\"\\" in the namespace '
        '\\"shop\\"" logger="UnhandledError"'
    )


def role(rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"metadata": {"name": RS}, "rules": rules}


PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "delete"]}


def evidence(*, bound: bool, rules: list[dict[str, Any]], log: list[str]) -> Any:
    ev = controller_manager()
    bindings = [bootstrap_binding("replicaset")] if bound else []
    return replace(
        ev,
        clusterroles=Fetched({"items": [role(rules)]}),
        clusterrolebindings=Fetched({"items": bindings}),
        process=replace(ev.process, log="\n".join(log)),
    )


def test_the_plan_deletes_the_binding_and_its_revert_restores_it_and_fails_while_still_refused() -> None:
    plan = PermissionRevoked().plan(Node("chaoskit-control-plane", "control-plane"), PermissionParams())
    assert plan.apply[0].endswith(f"delete clusterrolebinding {RS}")
    assert '"name":"replicaset-controller","namespace":"kube-system"' in plan.revert[0]
    assert "auth can-i create pods" in plan.revert[1] and "still refused" in plan.revert[1]
    assert "exit" not in " ".join(plan.revert)  # the dead-man switch runs every revert line in one script
    hpa = PermissionRevoked().plan(Node("x", "worker"), PermissionParams(controller="horizontal-pod-autoscaler"))
    assert "system:controller:horizontal-pod-autoscaler" in hpa.apply[0] and "--subresource scale" in hpa.revert[1]


def test_a_klog_refusal_is_read_with_who_what_and_when() -> None:
    now = datetime(2026, 12, 5, 6, 0, tzinfo=UTC).timestamp()
    (r,) = refusals(klog(now - 5), now)
    assert (r.who, r.verb, r.resource, r.group) == (WHO, "create", "pods", "")
    assert r.at == now - 5
    january = datetime(2027, 1, 1, 0, 0, 10, tzinfo=UTC).timestamp()
    assert logged_at("E1231 23:59:59.000000 1 x.go:1] y", january) == january - 11  # last year's December


def test_a_missing_binding_is_named_with_what_its_controller_was_refused() -> None:
    ev = evidence(bound=False, rules=[PODS], log=[])
    ev = replace(ev, process=replace(ev.process, log=klog(ev.collected_at - 3)))
    (finding,) = permissions(ev).findings
    assert finding.severity == "critical"
    assert finding.title == (
        f"replicaset-controller lost its permissions: ClusterRoleBinding {RS} is missing; it was refused create pods"
    )


def test_a_refusal_the_rbac_grants_again_is_history_and_one_it_does_not_is_current() -> None:
    ev = evidence(bound=True, rules=[PODS], log=[])
    fixed = replace(ev, process=replace(ev.process, log=klog(ev.collected_at - 3)))
    assert permissions(fixed).findings == ()
    stripped = replace(fixed, clusterroles=Fetched({"items": [role([])]}))  # the role lost its rule out of band
    (finding,) = permissions(stripped).findings
    assert finding.severity == "warning" and finding.title == f"{WHO} is forbidden to create pods (403 in the last 30s)"
    old = replace(stripped, process=replace(ev.process, log=klog(ev.collected_at - 300)))
    assert permissions(old).findings == ()
