"""`chaoskit cluster up | down | status`: the steps behind the commands, each a small function.

Creation is an ordered list of steps sharing the same runner, cache and
progress, in the manner of kind's own create actions.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from chaoskit.cluster import build, docker, versions
from chaoskit.cluster import config as kind_config
from chaoskit.cluster.assets import images_dir
from chaoskit.cluster.cache import Cache
from chaoskit.cluster.kind import Kind, container_addresses, node_kubectl
from chaoskit.cluster.kwok import controller as kwok_controller
from chaoskit.cluster.kwok.simulate import simulate
from chaoskit.cluster.marker import MARKER, marker_configmap
from chaoskit.errors import ToolError
from chaoskit.figures import seconds
from chaoskit.model.kwok import REAL_NODES_SELECTOR, SIMULATED_SELECTOR, is_simulated
from chaoskit.progress import Progress
from chaoskit.seams.kube import Kube, condition
from chaoskit.seams.nodecontainers import NodeContainer, node_containers
from chaoskit.seams.poll import poll
from chaoskit.seams.shell import Runner

REGISTRY_PROBE = "https://registry-1.docker.io/v2/"
READY_TIMEOUT = 300.0
REUSE_TIMEOUT = 90.0


def registry_reachable(url: str = REGISTRY_PROBE, timeout: float = 3.0) -> bool:
    """Any HTTP answer (even 401) means a registry can be reached; a network error means it cannot."""
    try:
        urllib.request.urlopen(url, timeout=timeout)  # noqa: S310 - fixed https URL
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False
    return True


def choose_node_image(requested: str) -> str:
    """'auto' -> the stock image when a registry answers, else 'build'; anything else is taken as given."""
    if requested != "auto":
        return requested
    return versions.STOCK_NODE_IMAGE if registry_reachable() else "build"


@dataclass
class UpResult:
    name: str
    created: bool
    node_image: str
    seconds: float
    kubeconfig_context: str
    simulated_nodes: int = 0


def connect_kind(context: str) -> Kube:
    """The API client for a kind cluster: its context in the kubeconfig kind wrote ($KUBECONFIG or ~/.kube/config)."""
    return Kube.connect(None, context)


def up(
    name: str | None,
    config_path: Path,
    image: str,
    runner: Runner,
    cache: Cache,
    progress: Progress,
    *,
    kwok_nodes: int = 0,
    connect: Callable[[str], Kube] = connect_kind,
) -> UpResult:
    t0 = time.monotonic()
    cfg = kind_config.load(config_path, name)
    cache.sweep_temporaries()
    docker.ensure_host_tools(runner, progress)
    docker.ensure_host_limits(progress)
    docker.ensure_engine(runner, cache, progress)
    wanted = choose_node_image(image)
    artifacts = build.build_all(cache, runner, progress, offline_node_image=wanted == "build")
    node_image = artifacts.node_image or wanted
    kind = Kind(runner, artifacts.bins["kind"] / "kind")
    _offer_binaries(cache, artifacts.bins)
    created = False
    existing = node_containers(runner, cfg.name)
    if existing and (why := _why_recreate(runner, cfg, existing, node_image)):
        with progress.step(f"cluster {cfg.name!r} {why}; deleting it to recreate"):
            kind.delete(cfg.name)
        existing = []
    if existing:
        progress.info(
            f"cluster {cfg.name!r} exists; reusing it (chaoskit cluster down --cluster {cfg.name} to rebuild)"
        )
    else:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="kind-config-") as f:
            f.write(cfg.text)
            f.flush()
            with progress.step(f"kind create cluster {cfg.name} ({1 + cfg.workers} nodes)"):
                kind.create(cfg.name, Path(f.name), node_image, log=cache.root / "logs" / f"kind-create-{cfg.name}.log")
        created = True
    if created:
        # metrics-server's first call goes to the kubernetes Service: started on a node whose kube-proxy is not up
        # yet, it panics on a dial timeout and waits out the kubelet's back-off (about 25 s of every new cluster)
        with progress.step("waiting for kube-proxy on every node"):
            wait_kube_proxy(runner, cfg.name, READY_TIMEOUT)
    with progress.step("installing metrics-server and loading the workload image"):
        node_kubectl(
            runner, cfg.name, "apply", "-f", "-", input=(images_dir() / "addons" / "metrics-server.yaml").read_bytes()
        )
        # the marker that lets `chaoskit run` recognise a cluster it built (see chaoskit.safety)
        node_kubectl(runner, cfg.name, "apply", "-f", "-", input=json.dumps(marker_configmap(cfg.fingerprint)).encode())
        for archive in artifacts.workload_archives:
            kind.load_archive(cfg.name, archive)
    with progress.step("waiting for nodes, system pods and the metrics API"):
        wait_ready(runner, cfg.name, READY_TIMEOUT)
    simulated_nodes(cfg.name, kwok_nodes, runner, cache, progress, connect)
    return UpResult(cfg.name, created, node_image, time.monotonic() - t0, f"kind-{cfg.name}", kwok_nodes)


def kwok_present(runner: Runner, cluster: str) -> bool:
    """Whether the cluster has simulated nodes or kwok's controller, asked inside the control-plane node."""
    nodes = node_kubectl(runner, cluster, "get", "nodes", "-l", SIMULATED_SELECTOR, "-o", "name")
    ns, name = kwok_controller.NAMESPACE, kwok_controller.NAME
    found = node_kubectl(runner, cluster, "get", "deployment", "-n", ns, name, "--ignore-not-found", "-o", "name")
    return bool(nodes.strip() or found.strip())


def simulated_nodes(
    cluster: str, count: int, runner: Runner, cache: Cache, progress: Progress, connect: Callable[[str], Kube]
) -> None:
    """Exactly `count` simulated nodes; with none asked for and none there, nothing more is asked of the cluster (an
    API client is made only when there is something to do)."""
    if count == 0 and not kwok_present(runner, cluster):
        return
    simulate(cluster, count, connect(f"kind-{cluster}"), runner, cache, progress)


def _why_recreate(
    runner: Runner, cfg: kind_config.ClusterConfig, existing: list[NodeContainer], node_image: str
) -> str | None:
    """Why an existing cluster cannot be reused, asked in order (the health check waits, so it comes late); None
    when it can."""
    if any(n.state != "running" for n in existing):
        # Node containers stopped with the host's Docker engine; their addresses may change on restart and our
        # node image does not rewrite them, so a fresh cluster is the reliable way back.
        return "has stopped nodes"
    if moved := moved_nodes(runner, cfg.name):
        # Docker gave the nodes new addresses on restart; each Node keeps its old InternalIP, so the API server
        # would reach one node's kubelet at another's address (exec and logs say "pod does not exist")
        return f"nodes changed address ({', '.join(moved)})"
    if existing[0].image != node_image:
        # the node image changed (a fix in what runs on the nodes): an old cluster would keep the old nodes
        return f"runs node image {existing[0].image}, not {node_image}"
    if not _healthy_within(runner, cfg.name, REUSE_TIMEOUT):
        # e.g. a node that never came back after its container restarted: recreating beats repairing
        return "exists but is not healthy"
    if (made_from := config_made_from(runner, cfg.name)) not in (None, cfg.fingerprint):
        # kind reads its config only at creation: a changed kind-config.yaml (or a file it mounts) needs a new cluster
        return f"was made from another kind config ({made_from or 'not recorded'}, now {cfg.fingerprint})"
    return None


def _offer_binaries(cache: Cache, bins: dict[str, Path]) -> None:
    """Link the built kind and kubectl into <cache>/bin so users can put one folder on PATH."""
    links = cache.root / "bin"
    links.mkdir(parents=True, exist_ok=True)
    for tool, target in (("kind", "kind"), ("kubectl", "kubernetes")):
        if target in bins:
            link = links / tool
            link.unlink(missing_ok=True)
            link.symlink_to(bins[target] / tool)


def wait_ready(runner: Runner, cluster: str, timeout: float) -> None:
    """Until every node is Ready, every kube-system pod Ready and the metrics API serves node metrics."""
    _wait_until_no_problems(lambda: readiness_problems(runner, cluster), timeout, 3.0, f"cluster {cluster!r} not ready")


def _wait_until_no_problems(problems: Callable[[], list[str]], timeout: float, interval: float, what: str) -> None:
    last = [""]

    def none_left() -> bool:
        try:
            found = problems()
        except ToolError as exc:
            found = [str(exc).splitlines()[0]]
        last[0] = "; ".join(found)
        return not found

    if not poll(none_left, timeout, interval).done:
        raise ToolError(f"{what} after {seconds(timeout)}: {last[0]}")


def kube_proxy_problems(runner: Runner, cluster: str) -> list[str]:
    """Nodes without a running kube-proxy pod (a pod's node is empty until it is scheduled); simulated nodes run
    none."""
    nodes = json.loads(node_kubectl(runner, cluster, "get", "nodes", "-l", REAL_NODES_SELECTOR, "-o", "json"))["items"]
    pods = json.loads(
        node_kubectl(runner, cluster, "get", "pods", "-n", "kube-system", "-l", "k8s-app=kube-proxy", "-o", "json")
    )["items"]
    running = {p["spec"].get("nodeName") for p in pods if condition(p, "Ready")}
    return [f"no kube-proxy running on {n['metadata']['name']}" for n in nodes if n["metadata"]["name"] not in running]


def wait_kube_proxy(runner: Runner, cluster: str, timeout: float) -> None:
    _wait_until_no_problems(
        lambda: kube_proxy_problems(runner, cluster), timeout, 1.0, f"cluster {cluster!r}: kube-proxy not up"
    )


def _healthy_within(runner: Runner, cluster: str, timeout: float) -> bool:
    try:
        wait_ready(runner, cluster, timeout)
    except ToolError:
        return False
    return True


def config_made_from(runner: Runner, cluster: str) -> str | None:
    """The fingerprint of the kind config chaoskit made the cluster from, as its marker says: "" when the marker
    predates the fingerprint, None when there is no marker (a cluster chaoskit did not make is left as it is)."""
    try:
        marker = json.loads(
            node_kubectl(runner, cluster, "get", "configmap", "-n", "kube-system", MARKER, "-o", "json")
        )
    except ToolError:
        return None
    return str(marker.get("data", {}).get("kindConfig", ""))


def moved_nodes(runner: Runner, cluster: str) -> list[str]:
    """Nodes whose registered InternalIP is no longer an address of their container."""
    try:
        nodes = json.loads(node_kubectl(runner, cluster, "get", "nodes", "-o", "json"))["items"]
    except ToolError:
        return []  # the API is not up yet: the health wait below decides
    held = container_addresses(runner, cluster)
    moved = []
    for n in nodes:
        name = n["metadata"]["name"]
        internal = {a["address"] for a in n.get("status", {}).get("addresses", []) if a.get("type") == "InternalIP"}
        if name in held and internal and not internal & held[name]:
            moved.append(name)
    return sorted(moved)


def readiness_problems(runner: Runner, cluster: str) -> list[str]:
    """What keeps the cluster from being ready; simulated nodes are left to kwok's step (a cluster whose kwok
    controller is gone is still reused, and that step puts it back)."""
    nodes = json.loads(node_kubectl(runner, cluster, "get", "nodes", "-l", REAL_NODES_SELECTOR, "-o", "json"))["items"]
    problems = [f"node {n['metadata']['name']} not Ready" for n in nodes if not condition(n, "Ready")]
    pods = json.loads(node_kubectl(runner, cluster, "get", "pods", "-n", "kube-system", "-o", "json"))["items"]
    problems += [f"pod {p['metadata']['name']} not Ready" for p in pods if not condition(p, "Ready")]
    if not problems:
        try:
            node_kubectl(runner, cluster, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes")
        except ToolError:
            problems.append("metrics API not serving yet")
    return problems


def down(name: str, runner: Runner, cache: Cache, progress: Progress) -> bool:
    """Delete the cluster; False when there was none (not an error)."""
    if not docker.engine_running(runner):
        return False
    if not node_containers(runner, name):
        return False
    kind_bin = shutil.which("kind") or str(cache.root / "bin" / "kind")
    with progress.step(f"kind delete cluster {name}"):
        if Path(kind_bin).exists():
            Kind(runner, Path(kind_bin)).delete(name)
        else:  # kind is gone from the cache: remove the containers the way kind would
            for node in node_containers(runner, name):
                runner.run(["docker", "rm", "-f", "-v", node.name])
    return True


@dataclass
class NodeStatus:
    name: str
    role: str
    container: str
    ready: bool | None = None
    kubelet_version: str = ""


@dataclass
class Status:
    name: str
    docker: bool
    exists: bool
    node_image: str = ""
    nodes: list[NodeStatus] = field(default_factory=list)
    api_server: str = "unknown"
    kubeconfig_context: str = ""
    simulated_nodes: int = 0  # kwok's: Node objects with no container behind them
    simulated_ready: int = 0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def status(name: str, runner: Runner) -> Status:
    if not docker.engine_running(runner):
        return Status(name, docker=False, exists=False)
    containers = node_containers(runner, name)
    if not containers:
        return Status(name, docker=True, exists=False)
    st = Status(name, True, True, containers[0].image, kubeconfig_context=f"kind-{name}")
    by_name = {c.name: NodeStatus(c.name, c.role, c.state) for c in containers}
    st.nodes = list(by_name.values())
    try:
        st.api_server = node_kubectl(runner, name, "get", "--raw", "/readyz").strip() or "ok"
        for n in json.loads(node_kubectl(runner, name, "get", "nodes", "-o", "json"))["items"]:
            if is_simulated(n):
                st.simulated_nodes += 1
                st.simulated_ready += condition(n, "Ready")
            elif (ns := by_name.get(n["metadata"]["name"])) is not None:
                ns.ready = condition(n, "Ready")
                ns.kubelet_version = n["status"]["nodeInfo"]["kubeletVersion"]
    except (ToolError, LookupError) as exc:
        st.api_server = f"unreachable: {str(exc).splitlines()[0]}"
    return st
