"""What a run tests: chaoskit's own web workload, or the user's Deployment (or StatefulSet), HPA and Service.

A user's subject is found in the cluster before anything is injected (a name that is not there is a clear error,
exit 4, nothing injected). chaoskit never creates or deletes any of it; the one thing it changes, an HPA's
minReplicas for a step's scaleUp, is journaled before the change ("changed", with the value to put back) and put
back after the run, or by `chaoskit revert` if the run died.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

from chaoskit.errors import UsageError
from chaoskit.journal import Journal
from chaoskit.model.playbook import Subject as SubjectSpec
from chaoskit.model.playbook import SubjectLoad
from chaoskit.seams.kube import Kube, NotFound, condition

Kind = Literal["Deployment", "StatefulSet"]
PLURAL: dict[Kind, str] = {"Deployment": "deployments", "StatefulSet": "statefulsets"}


@dataclass(frozen=True)
class Subject:
    namespace: str
    kind: Kind
    name: str
    labels: dict[str, str]  # its pods' labels (the selector's matchLabels)
    hpa: str | None
    service: str | None
    ours: bool = False  # chaoskit's workload: it goes with chaoskit's namespace, nothing to put back

    @property
    def hpa_path(self) -> str:
        if self.hpa is None:
            raise UsageError(f"{self.kind} {self.namespace}/{self.name} has no HorizontalPodAutoscaler to scale up")
        return f"/apis/autoscaling/v2/namespaces/{self.namespace}/horizontalpodautoscalers/{self.hpa}"

    def words(self) -> str:
        parts = [f"{self.kind} {self.namespace}/{self.name}"]
        parts += [f"HPA {self.hpa}"] if self.hpa else []
        parts += [f"Service {self.service}"] if self.service else []
        return ", ".join(parts)


def chaoskits(namespace: str) -> Subject:
    """chaoskit's workload (chaoskit.workloads): Deployment, HPA and Service all named web."""
    return Subject(namespace, "Deployment", "web", {"app": "web"}, "web", "web", ours=True)


def resolve(kube: Kube, spec: SubjectSpec) -> Subject:
    """The user's objects as they are in the cluster; UsageError naming what is missing."""
    ns = spec.namespace
    kind: Kind = "StatefulSet" if spec.stateful_set else "Deployment"
    workload = _workload(kube, ns, kind, spec)
    name = workload["metadata"]["name"]
    labels = dict(workload["spec"]["selector"].get("matchLabels") or {})
    return Subject(ns, kind, name, labels, _hpa(kube, ns, kind, name, spec.hpa), _service(kube, ns, labels, spec))


def _workload(kube: Kube, ns: str, kind: Kind, spec: SubjectSpec) -> Any:
    base = f"/apis/apps/v1/namespaces/{ns}/{PLURAL[kind]}"
    if spec.selector is None:
        name = spec.stateful_set or spec.deployment
        found = kube.find(f"{base}/{name}")
        if found is None:
            raise UsageError(f"subject: no {kind} {ns}/{name} in this cluster")
        return found
    selector = ",".join(f"{k}={v}" for k, v in sorted(spec.selector.items()))
    items = _items(kube, base, labelSelector=selector)
    if len(items) != 1:
        names = ", ".join(i["metadata"]["name"] for i in items) or "none"
        raise UsageError(f"subject: the selector {selector} must match one Deployment in {ns}, it matches {names}")
    return items[0]


def _hpa(kube: Kube, ns: str, kind: Kind, name: str, wanted: str | None) -> str | None:
    base = f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers"
    if wanted:
        if kube.find(f"{base}/{wanted}") is None:
            raise UsageError(f"subject: no HorizontalPodAutoscaler {ns}/{wanted} in this cluster")
        return wanted
    for hpa in _items(kube, base):
        ref = hpa["spec"]["scaleTargetRef"]
        if ref.get("kind") == kind and ref.get("name") == name:
            return str(hpa["metadata"]["name"])
    return None


def _service(kube: Kube, ns: str, labels: dict[str, str], spec: SubjectSpec) -> str | None:
    if spec.service:
        if kube.find(f"/api/v1/namespaces/{ns}/services/{spec.service}") is None:
            raise UsageError(f"subject: no Service {ns}/{spec.service} in this cluster")
        return spec.service
    for svc in _items(kube, f"/api/v1/namespaces/{ns}/services"):
        selector = svc["spec"].get("selector") or {}
        if selector and all(labels.get(k) == v for k, v in selector.items()):
            return str(svc["metadata"]["name"])
    return None


def _items(kube: Kube, path: str, **query: str) -> list[Any]:
    try:
        return list(kube.get(path, **query).get("items", []))
    except NotFound:  # a type the cluster does not serve: none of it
        return []


def hpa_bounds(kube: Kube, subject: Subject) -> tuple[int, int]:
    spec = kube.get(subject.hpa_path)["spec"]
    return int(spec.get("minReplicas", 1)), int(spec["maxReplicas"])


def replicas(kube: Kube, subject: Subject) -> int:
    """How many replicas its spec asks for now."""
    path = f"/apis/apps/v1/namespaces/{subject.namespace}/{PLURAL[subject.kind]}/{subject.name}"
    return int(kube.get(path)["spec"].get("replicas", 1))


def raise_min_replicas(kube: Kube, subject: Subject, replicas: int, journal: Journal) -> None:
    """The HPA asked for `replicas` pods now; a user's HPA gets its minReplicas back after the run (journaled)."""
    if not subject.ours:
        before = kube.get(subject.hpa_path)["spec"].get("minReplicas", 1)
        journal.append(
            "changed",
            id=uuid.uuid4().hex[:12],
            path=subject.hpa_path,
            restore={"spec": {"minReplicas": before}},
            what=f"HPA {subject.namespace}/{subject.hpa} minReplicas back to {before} (raised to {replicas})",
        )
    kube.patch(subject.hpa_path, {"spec": {"minReplicas": replicas}})


def able_to_scale(kube: Kube, subject: Subject) -> bool:
    """The HPA has reconciled its target once and says it can change its scale (AbleToScale=True): a scale-up asked
    before that waits on the HPA controller's first look, not on the fault."""
    return condition(kube.get(subject.hpa_path), "AbleToScale")


def put_back(kube: Kube, journal: Journal) -> list[str]:
    """Undo every change the journal holds that is not put back yet (oldest last); what was put back, in words."""
    done = []
    for change in reversed(journal.pending_changes()):
        kube.patch(change["path"], change["restore"])
        journal.append("restored", id=change["id"])
        done.append(change.get("what", change["path"]))
    return done


def service_url(kube: Kube, ns: str, load: SubjectLoad) -> str:
    """Where chaoskit's load generator sends its requests: the Service's cluster DNS name, port and path."""
    svc = kube.find(f"/api/v1/namespaces/{ns}/services/{load.service}")
    if svc is None:
        raise UsageError(f"subject.load: no Service {ns}/{load.service} in this cluster")
    port = load.port or svc["spec"]["ports"][0]["port"]
    return f"http://{load.service}.{ns}.svc.cluster.local:{port}{load.path}"
