"""Manifests of chaoskit's test workload (images/workload): a CPU-burning web Deployment, its Service, an HPA
and a load generator. Pure functions returning API objects as dicts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chaoskit.cluster.images import PAUSE_IMAGE, WORKLOAD_IMAGE
from chaoskit.model.kwok import SIMULATED_LABEL, TAINT
from chaoskit.seams.kube import Kube

Obj = dict[str, Any]
PORT = 8080
PORT_NAME = "http"  # the web Service's port, as kube-proxy names its rules


def namespace(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"chaoskit.dev/owned": "true"}},
    }


NODE_LOST_TAINTS = ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")


def tolerations(seconds: int) -> list[Obj]:
    """How long a pod stays bound to a lost node (the admission plugin's default is 300 s)."""
    return [
        {"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": seconds} for k in NODE_LOST_TAINTS
    ]


def deployment(ns: str, name: str, replicas: int, pod_spec: Obj) -> Obj:
    """A Deployment of `replicas` pods labelled app=<name>, each with `pod_spec`."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


def web_deployment(
    ns: str,
    name: str = "web",
    replicas: int = 1,
    cpu_request: str = "100m",
    toleration_seconds: int | None = None,
    ready_after: int = 0,
) -> Obj:
    """`ready_after` seconds from container start to Ready (the readiness probe's initial delay)."""
    labels = {"app": name}
    pod_spec = {
        "terminationGracePeriodSeconds": 5,
        **({"tolerations": tolerations(toleration_seconds)} if toleration_seconds is not None else {}),
        # spread over both workers so cross-node traffic is exercised
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": labels},
            }
        ],
        "containers": [
            {
                "name": "web",
                "image": WORKLOAD_IMAGE,
                "imagePullPolicy": "Never",  # loaded by `chaoskit cluster up`; no registry to pull from
                "args": ["serve", "-addr", f":{PORT}"],
                "ports": [{"containerPort": PORT, "name": "http"}],
                "resources": {
                    "requests": {"cpu": cpu_request, "memory": "16Mi"},
                    "limits": {"cpu": "500m", "memory": "64Mi"},
                },
                "readinessProbe": {
                    "httpGet": {"path": "/readyz", "port": PORT},
                    "periodSeconds": 1,
                    **({"initialDelaySeconds": ready_after} if ready_after else {}),
                },
            }
        ],
    }
    return deployment(ns, name, replicas, pod_spec)


def simulated_pods(ns: str, name: str = "backlog", replicas: int = 1) -> Obj:
    """A Deployment whose pods may only go to simulated nodes (kwok): a backlog of hundreds costs the host nothing."""
    toleration = {"key": TAINT["key"], "operator": "Exists", "effect": TAINT["effect"]}
    pod_spec = {
        "nodeSelector": {SIMULATED_LABEL[0]: SIMULATED_LABEL[1]},
        "tolerations": [toleration],
        "containers": [{"name": name, "image": PAUSE_IMAGE}],
    }
    return deployment(ns, name, replicas, pod_spec)


def service(ns: str, name: str = "web", session_affinity: bool = False) -> Obj:
    spec: Obj = {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": PORT, "name": PORT_NAME}]}
    if session_affinity:  # kube-proxy keeps each client IP on the pod it first reached (10800 s stock)
        spec["sessionAffinity"] = "ClientIP"
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def hpa(ns: str, target: str = "web", min_replicas: int = 1, max_replicas: int = 6, cpu_percent: int = 50) -> Obj:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": target, "namespace": ns},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": min_replicas,
            "maxReplicas": max_replicas,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu_percent}},
                }
            ],
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 0},
                # the default 5 min window would make every run wait 5 min for scale-down
                "scaleDown": {
                    "stabilizationWindowSeconds": 15,
                    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
                },
            },
        },
    }


def raise_min_replicas(kube: Kube, ns: str, replicas: int, target: str = "web") -> None:
    """Ask the HPA for `replicas` pods at once, whatever the load: its minReplicas raised."""
    kube.patch(
        f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/{target}", {"spec": {"minReplicas": replicas}}
    )


def load_generator(ns: str, url: str, concurrency: int = 4, name: str = "load") -> Obj:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            "name": "load",
                            "image": WORKLOAD_IMAGE,
                            "imagePullPolicy": "Never",
                            "args": ["load", "-c", str(concurrency), url],
                            "resources": {"requests": {"cpu": "50m", "memory": "16Mi"}},
                        }
                    ],
                },
            },
        },
    }


def client_pod(ns: str, name: str, node: str | None = None) -> Obj:
    """A pod that idles so tests can exec `workload get URL` from it (optionally pinned to a node)."""
    spec: Obj = {
        "terminationGracePeriodSeconds": 1,
        "containers": [
            {
                "name": "client",
                "image": WORKLOAD_IMAGE,
                "imagePullPolicy": "Never",
                "args": ["serve", "-addr", ":8081"],
                "resources": {"requests": {"cpu": "10m", "memory": "8Mi"}},
            }
        ],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
        "spec": spec,
    }


def ready_replicas(kube: Kube, ns: str, name: str = "web") -> int:
    d = kube.get(f"/apis/apps/v1/namespaces/{ns}/deployments/{name}")
    return int(d.get("status", {}).get("readyReplicas") or 0)


def terminating(kube: Kube, ns: str) -> bool:
    """True while namespace `ns` is being deleted; False when it is active or absent."""
    found = kube.find(f"/api/v1/namespaces/{ns}")
    return found is not None and bool(found.get("metadata", {}).get("deletionTimestamp"))


def probe_pod(
    ns: str,
    name: str,
    url: str,
    every: float,
    timeout: float,
    node: str | None = None,
    request: Sequence[str] = (),
) -> Obj:
    """A pod that asks `url` every `every` seconds and logs a line per request (an http probe's samples); `request`:
    the probe's further flags (method, headers, body, criteria), each as one `-flag=value` argument."""
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "chaoskit-probe", "chaoskit.dev/probe": name}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "restartPolicy": "Never",  # a restarted prober would lose nothing, but it must not hide a crash
            "containers": [
                {
                    "name": "probe",
                    "image": WORKLOAD_IMAGE,
                    "imagePullPolicy": "Never",
                    "args": ["probe", url, "-every", f"{every:g}s", "-timeout", f"{timeout:g}s", *request],
                    "resources": {"requests": {"cpu": "10m", "memory": "8Mi"}},
                }
            ],
        },
    }
    if node:
        pod["spec"]["nodeName"] = node  # bound by us: it runs there even while the scheduler is down
    return pod
