"""`chaoskit install`: the operator and the node agents into a cluster, and the credentials to reach the agents.

Applied with server-side apply, so installing again changes only what changed (a new image rolls the pods through
an annotation carrying its id). The private CA is made once per install (chaoskit.seams.pki) and lives only in
two Secrets: the agents' server pair and the clients' pair. A CLI reaches the agents with the clients' pair, read
from the API once and kept under ~/.local/state/chaoskit/installs/<context>/ with the node list, so reverts still
work while the API server is down.
"""

from __future__ import annotations

import base64
import io
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ruamel.yaml import YAML

from chaoskit.cluster.assets import deploy_dir
from chaoskit.cluster.experiments import FINAL, FINALIZER
from chaoskit.cluster.selfimage import CHAOSKIT_IMAGE
from chaoskit.journal import state_home
from chaoskit.model.kwok import REAL_NODES_SELECTOR
from chaoskit.seams import pki
from chaoskit.seams.agentexec import PORT, AgentNode, AgentNodeExec, client_context
from chaoskit.seams.kube import Kube, KubeError, Obj, condition, object_path
from chaoskit.seams.nodeexec import CONTROL_PLANE_LABEL

NAMESPACE = "chaoskit-system"
AGENT_SECRET = "chaoskit-agent-tls"
CLIENT_SECRET = "chaoskit-client-tls"
MANIFESTS = (
    "namespace.yaml",
    "crd.yaml",
    "schedule-crd.yaml",
    "rbac.yaml",
    "operator.yaml",
    "agent.yaml",
)  # in the order applied
IMAGE_ID = "chaoskit.dev/image-id"  # on the pod templates: a rebuilt image of the same tag rolls the pods
AGENT_PATH = f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/chaoskit-agent"
OPERATOR_PATH = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/chaoskit-operator"

# Which nodes run an agent: every node (kind, kubeadm: chaoskit breaks the control plane through its node), or the
# workers only (a managed cluster: its control-plane nodes, if any are listed, are not ours to run a pod on)
Nodes = Literal["all", "workers"]
NODES: tuple[Nodes, ...] = ("all", "workers")
# on the agent DaemonSet when the agents run on the workers only; absent means every node (installs before it)
NODES_ANNOTATION = "chaoskit.dev/nodes"


def _on_workers(doc: Obj) -> None:
    """Keep the agent off control-plane nodes and let the operator run on a worker."""
    if doc["kind"] == "DaemonSet":
        doc["metadata"].setdefault("annotations", {})[NODES_ANNOTATION] = "workers"
        affinity = doc["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
        for term in affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]:
            term["matchExpressions"].append({"key": CONTROL_PLANE_LABEL, "operator": "DoesNotExist"})
    elif doc["kind"] == "Deployment":
        doc["spec"]["template"]["spec"].pop("nodeSelector", None)
        doc["spec"]["template"]["spec"].pop("tolerations", None)


def manifests(
    image: str = CHAOSKIT_IMAGE, image_id: str = "", nodes: Nodes = "all", diagnose_every: float = 0.0
) -> list[Obj]:
    """Every object of deploy/chaoskit, with `image` in place of the shipped reference; `nodes` says which nodes
    run an agent (deploy/chaoskit as it is for "all"); `diagnose_every` seconds, the operator's diagnosis period."""
    out: list[Obj] = []
    for name in MANIFESTS:
        for doc in YAML(typ="safe").load_all((deploy_dir() / name).read_text()):
            if not doc:
                continue
            template = doc.get("spec", {}).get("template")
            if template is not None:
                for c in template["spec"]["containers"]:
                    c["image"] = image
                if image_id:
                    template["metadata"].setdefault("annotations", {})[IMAGE_ID] = image_id
            if nodes == "workers":
                _on_workers(doc)
            if diagnose_every and doc["kind"] == "Deployment":
                doc["spec"]["template"]["spec"]["containers"][0]["args"] += ["--diagnose-every", f"{diagnose_every:g}"]
            out.append(doc)
    return out


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def secret(name: str, ca: bytes, pair: pki.Pair, namespace: str = NAMESPACE) -> Obj:
    data = {"ca.crt": _b64(ca), "tls.crt": _b64(pair.cert), "tls.key": _b64(pair.key)}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "chaoskit"}},
        "data": data,
    }


def _secret_path(name: str, namespace: str = NAMESPACE) -> str:
    return f"/api/v1/namespaces/{namespace}/secrets/{name}"


def ensure_secrets(kube: Kube, install: str, rotate: bool = False, namespace: str = NAMESPACE) -> bool:
    """The two TLS Secrets, issued from a fresh CA when either is missing (or `rotate`); True when issued."""
    paths = [_secret_path(n, namespace) for n in (AGENT_SECRET, CLIENT_SECRET)]
    if not rotate and all(kube.find(p) is not None for p in paths):
        return False
    issued = pki.issue(install)
    kube.apply(secret(AGENT_SECRET, issued.ca, issued.server, namespace))
    kube.apply(secret(CLIENT_SECRET, issued.ca, issued.client, namespace))
    return True


def prepare(kube: Kube, install: str, namespace: str) -> bool:
    """For an install another tool applies (the Helm chart's hook), before its pods start: the namespace labelled
    as install's own (privileged pods admitted) and the TLS Secrets, issued when either is missing; True then."""
    ns = manifests()[0]
    ns["metadata"]["name"] = namespace
    kube.apply(ns)
    return ensure_secrets(kube, install, namespace=namespace)


def remove_secrets(kube: Kube, namespace: str) -> list[str]:
    """Delete the TLS Secrets `prepare` issued (the chart's uninstall: they are no object of its release); which."""
    return [n for n in (AGENT_SECRET, CLIENT_SECRET) if kube.delete(_secret_path(n, namespace)) is not None]


def ready(kube: Kube) -> str | None:
    """None when every node runs a Ready agent and the operator is available; else what is still missing."""
    ds = kube.find(AGENT_PATH)
    st = (ds or {}).get("status", {})
    want, have = st.get("desiredNumberScheduled", 0), st.get("numberReady", 0)
    if not ds or not want or have < want or st.get("updatedNumberScheduled", 0) < want:
        return f"agents ready on {have} of {want or '?'} nodes"
    dep = kube.find(OPERATOR_PATH)
    if not operator_available(kube, dep) or (dep or {}).get("status", {}).get("updatedReplicas", 0) < 1:
        return "the operator is not available yet"
    return None


def operator_available(kube: Kube, found: Obj | None = None) -> bool:
    """Whether the installed operator (chaoskit-system/chaoskit-operator) is available: it acts on every namespace."""
    dep = found if found is not None else kube.find(OPERATOR_PATH)
    return dep is not None and condition(dep, "Available")


def uninstall_objects() -> Iterator[Obj]:
    """What uninstall deletes, the namespace (and with it the Secrets) last; the CRDs stay with their resources."""
    objs = [o for o in manifests() if o["kind"] != "CustomResourceDefinition"]
    yield from reversed(objs)


# --- the CLI's side: credentials and node list kept locally ------------------------------------------------------


@dataclass(frozen=True)
class LocalInstall:
    """What a CLI keeps of an install: the clients' TLS files and the nodes with their agents' addresses."""

    dir: Path

    @classmethod
    def for_context(cls, context: str) -> LocalInstall:
        return cls(state_home() / "installs" / context.replace("/", "_"))

    @property
    def present(self) -> bool:
        return (self.dir / "nodes.json").is_file()

    def save(self, kube: Kube) -> None:
        """Fetch the clients' pair and the node list from the API into this folder."""
        found = kube.find(_secret_path(CLIENT_SECRET))
        if found is None:
            raise KubeError(f"chaoskit is not installed there (no Secret {NAMESPACE}/{CLIENT_SECRET})")
        data = found["data"]
        self.dir.mkdir(parents=True, exist_ok=True)
        for name in ("ca.crt", "tls.crt", "tls.key"):
            path = self.dir / name
            path.write_bytes(base64.b64decode(data[name]))
            path.chmod(0o600)
        (self.dir / "nodes.json").write_text(json.dumps([n.__dict__ for n in agent_nodes(kube)], indent=1))

    def node_exec(self) -> AgentNodeExec:
        nodes = [AgentNode(**n) for n in json.loads((self.dir / "nodes.json").read_text())]
        return AgentNodeExec(nodes, client_context(self.dir / "ca.crt", self.dir / "tls.crt", self.dir / "tls.key"))

    def remove(self) -> None:
        for path in self.dir.glob("*"):
            path.unlink()
        if self.dir.exists():
            self.dir.rmdir()


def installed_nodes(kube: Kube) -> Nodes:
    """Which nodes the installed agents run on, as their DaemonSet says ("all" when it says nothing)."""
    ds = kube.find(AGENT_PATH) or {}
    said = (ds.get("metadata", {}).get("annotations") or {}).get(NODES_ANNOTATION)
    return "workers" if said == "workers" else "all"


def agent_nodes(kube: Kube, port: int = PORT) -> list[AgentNode]:
    """Every node that runs an agent, with its role and its agent's address (the node's InternalIP: the agent is
    on the host network); simulated nodes run no agent (nor anything else) and have no address, nor do
    control-plane nodes when the agents run on the workers only."""
    workers_only = installed_nodes(kube) == "workers"
    out = []
    for node in kube.get("/api/v1/nodes", labelSelector=REAL_NODES_SELECTOR)["items"]:
        meta, addresses = node["metadata"], node.get("status", {}).get("addresses") or []
        if workers_only and CONTROL_PLANE_LABEL in (meta.get("labels") or {}):
            continue
        ip = next((a["address"] for a in addresses if a["type"] == "InternalIP"), None)
        if ip is None:
            raise KubeError(f"node {meta['name']} has no InternalIP to reach its agent at")
        host = f"[{ip}]" if ":" in ip else ip
        role = "control-plane" if CONTROL_PLANE_LABEL in (meta.get("labels") or {}) else "worker"
        out.append(AgentNode(meta["name"], role, f"{host}:{port}"))
    return out


def in_cluster_node_exec(kube: Kube, tls_dir: Path) -> AgentNodeExec:
    """The operator's node seam: the nodes from the API, the clients' pair from its mounted Secret."""
    return AgentNodeExec(
        agent_nodes(kube), client_context(tls_dir / "ca.crt", tls_dir / "tls.crt", tls_dir / "tls.key")
    )


def describe(objs: list[Obj]) -> list[str]:
    return [f"{o['kind']}/{o['metadata']['name']}" for o in objs]


def dump(objs: list[Any]) -> str:
    """The manifests as one YAML stream (what --dry-run prints, kubectl-appliable)."""
    buf = io.StringIO()
    y = YAML()
    y.width = 4096
    y.dump_all(objs, buf)
    return buf.getvalue()


def _established(kube: Kube, path: str) -> None:
    kube.wait(
        f"the CRD {path.rsplit('/', 1)[-1]} to be established", lambda: condition(kube.get(path), "Established"), 60
    )


def install(
    kube: Kube,
    install_name: str,
    image: str,
    image_id: str,
    *,
    nodes: Nodes = "all",
    rotate: bool = False,
    diagnose_every: float = 0.0,
    timeout: float = 240.0,
    say: Callable[[str], None] = lambda _: None,
) -> float:
    """Apply everything (Secrets first, so the pods find them), wait until agents and operator are up; seconds."""
    t0 = time.monotonic()
    objs = manifests(image, image_id, nodes, diagnose_every)
    kube.apply(objs[0])  # the namespace, for the Secrets
    if ensure_secrets(kube, install_name, rotate):
        say("issued a new CA, the agents' and the clients' certificates")
    for obj in objs[1:]:
        kube.apply(obj)
        if obj["kind"] == "CustomResourceDefinition":
            _established(kube, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{obj['metadata']['name']}")
    say(f"applied {', '.join(describe(objs))}")
    kube.wait("the agents on every node and the operator", lambda: ready(kube) is None, timeout, interval=2)
    return time.monotonic() - t0


EXPERIMENTS = "/apis/chaoskit.dev/v1alpha1/chaosexperiments"


def _ref(experiment: Obj) -> str:
    return f"{experiment['metadata']['namespace']}/{experiment['metadata']['name']}"


def release_experiments(kube: Kube, say: Callable[[str], None] = lambda _: None) -> None:
    """Before the operator goes: refuse while an experiment still runs (nobody would revert its faults before their
    switches' deadlines, or let it go); let go of every finished one, which stays."""
    try:
        experiments = kube.get(EXPERIMENTS)["items"]
    except KubeError:
        experiments = []  # no CRD: nothing can be held
    held = [e for e in experiments if e["metadata"].get("finalizers")]
    running = [_ref(e) for e in held if (e.get("status") or {}).get("phase") not in FINAL]
    if running:
        raise KubeError(
            f"ChaosExperiments still running: {', '.join(running)}; delete them first (kubectl "
            "delete chx NAME: the operator reverts their faults) or let them finish, then uninstall"
        )
    for e in held:  # finished: nothing of them in place; the operator would let go of each on its deletion
        meta = e["metadata"]
        kept = [f for f in meta["finalizers"] if f != FINALIZER]
        kube.patch(
            f"/apis/chaoskit.dev/v1alpha1/namespaces/{meta['namespace']}/chaosexperiments/{meta['name']}",
            {"metadata": {"finalizers": kept}},
        )
        say(f"released finished ChaosExperiment {_ref(e)} from the operator's finalizer")
    _release_schedules(kube, say)


SCHEDULES = "/apis/chaoskit.dev/v1alpha1/chaosschedules"


def _release_schedules(kube: Kube, say: Callable[[str], None]) -> None:
    """Let go of every ChaosSchedule (kopf's finalizer is on it for its timer): with no operator a deletion would
    wait for ever. They stay, and start runs again under the next install."""
    try:
        schedules = kube.get(SCHEDULES)["items"]
    except KubeError:
        schedules = []  # no CRD (an install before schedules): none to let go of
    for s in schedules:
        meta = s["metadata"]
        if FINALIZER not in (meta.get("finalizers") or []):
            continue
        kube.patch(
            f"/apis/chaoskit.dev/v1alpha1/namespaces/{meta['namespace']}/chaosschedules/{meta['name']}",
            {"metadata": {"finalizers": [f for f in meta["finalizers"] if f != FINALIZER]}},
        )
        say(f"released ChaosSchedule {_ref(s)} from the operator's finalizer")


def uninstall(kube: Kube, say: Callable[[str], None] = lambda _: None) -> list[str]:
    """Delete what install applied but the CRD (deleting it would delete every experiment); what was deleted.
    Refused while an experiment still runs (release_experiments)."""
    release_experiments(kube, say)
    gone = []
    for obj in uninstall_objects():
        path = object_path(obj)
        if kube.find(path) is not None:
            kube.delete(path, propagation="Background")
            gone.append(f"{obj['kind']}/{obj['metadata']['name']}")
    if gone:
        # the namespace controller runs in kube-controller-manager, which an API-server outage leaves under the
        # kubelet's crash-loop back-off (up to 5 min)
        kube.wait(
            f"namespace {NAMESPACE} to be gone",
            lambda: kube.find(f"/api/v1/namespaces/{NAMESPACE}") is None,
            360,
            interval=2,
        )
        say(f"deleted {', '.join(gone)}")
    return gone
