"""The controllers' permissions: each controller runs as its own service account, bound to its ClusterRole by the
RBAC bootstrap policy (role and binding named after the account: chaoskit.components.controller_manager.controllers).
A binding that is gone takes that controller's permissions away while the controller manager stays up and leading;
its refusals (403) show only in its own log, because its events are refused too."""

from __future__ import annotations

from chaoskit.components.controller_manager.controllers import account_of, role_name
from chaoskit.components.rbac import FRESH_S, SA, Refusal, granted, refusals
from chaoskit.diagnosers.controller_manager.evidence import ControllerManagerEvidence
from chaoskit.diagnosers.kit.base import Assessed, Evidence, Finding
from chaoskit.diagnosers.kit.common import items
from chaoskit.figures import seconds


def summary(refused: list[Refusal]) -> tuple[str, ...]:
    counts: dict[tuple[str, str], int] = {}
    for r in refused:
        counts[(r.who, r.words())] = counts.get((r.who, r.words()), 0) + 1
    return tuple(f"{who} refused {what}: {n}x in the controller manager's log" for (who, what), n in counts.items())


def permissions(ev: ControllerManagerEvidence) -> Assessed:
    # a controller's ClusterRole -> the service account its binding should name
    roles = {
        name: account
        for r in items(ev.clusterroles)
        if (account := account_of(name := str(r["metadata"]["name"]))) is not None
    }
    bound = {str(b["metadata"]["name"]) for b in items(ev.clusterrolebindings)}
    read = ev.clusterroles.ok and ev.clusterrolebindings.ok
    missing = sorted(roles.keys() - bound) if read else []
    refused = refusals(ev.process.log, ev.collected_at)
    e = Evidence(
        "permissions",
        f"GET clusterroles, clusterrolebindings ({role_name('*')}); the controller manager's log (403s)",
        {
            "controller_roles": len(roles),
            "missing_bindings": ", ".join(missing) or None,
            "refused": len(refused),
            "api": None if read else (ev.clusterroles.error or ev.clusterrolebindings.error),
        },
        log_lines=summary(refused),
    )
    findings = []
    for name in missing:
        sa = roles[name]
        own = [r for r in refused if r.who == f"{SA}{sa}"]
        did = f"; it was refused {own[-1].words()}" if own else ""
        findings.append(
            Finding(
                "critical",
                "controller-manager",
                f"{sa} lost its permissions: ClusterRoleBinding {name} is missing{did}",
                f"the controller runs as service account kube-system/{sa} (--use-service-account-credentials) and "
                "the RBAC bootstrap policy binds it to its ClusterRole; with the binding gone (deleted by hand, a "
                "cleanup or a policy tool) the API server refuses its requests (403) until the binding is back or "
                "the API server next starts, and its events are refused too, so no FailedCreate shows it",
                (e,),
                (
                    f"kubectl auth can-i --list --as={SA}{sa}",
                    f"restore it: kubectl create clusterrolebinding {name} --clusterrole={name} "
                    f"--serviceaccount=kube-system:{sa} (or restart the API server, which re-creates it)",
                ),
                entity=f"clusterrolebinding/{name}",  # the cause: the controller only runs without it
            )
        )
    explained = {f"{SA}{roles[n]}" for n in missing}
    roles_now, bindings_now = items(ev.clusterroles), items(ev.clusterrolebindings)
    fresh = [
        r
        for r in refused
        if r.who not in explained
        and r.at is not None
        and ev.collected_at - r.at <= FRESH_S
        and read
        and not granted(r, roles_now, bindings_now)
    ]
    for who in dict.fromkeys(r.who for r in fresh):
        last = [r for r in fresh if r.who == who][-1]
        findings.append(
            Finding(
                "warning",
                "controller-manager",
                f"{who} is forbidden to {last.words()} (403 in the last {seconds(FRESH_S)})",
                "the API server's authorizer refuses a controller's request, and no ClusterRoleBinding grants it "
                "now: its role lacks the rule, or its binding names another subject",
                (e,),
                (f"kubectl auth can-i {last.verb} {last.resource} --as={who}",),
            )
        )
    return Assessed(e, tuple(findings))
