"""`chaoskit cluster kwok-nodes N` and `cluster up --kwok-nodes N`: kwok's image built and loaded, then N nodes."""

from __future__ import annotations

from chaoskit.cluster import build
from chaoskit.cluster.cache import Cache
from chaoskit.cluster.images import KWOK_IMAGE
from chaoskit.cluster.kind import Kind, archive_image
from chaoskit.cluster.kwok.converge import READY_TIMEOUT, Converged, converge
from chaoskit.progress import Progress
from chaoskit.seams.kube import Kube
from chaoskit.seams.shell import Runner


def load_kwok(cluster: str, runner: Runner, cache: Cache, progress: Progress) -> str:
    """Build kwok's image (cached) and load it into the cluster's control-plane node, where its pod runs; its id."""
    archive = build.build_kwok_image(cache, runner, progress)
    kind = build.build_binaries(("kind",), cache, runner, progress)["kind"] / "kind"
    with progress.step(f"loading {KWOK_IMAGE} into the control plane of cluster {cluster}"):
        Kind(runner, kind).load_archive(cluster, archive, role="control-plane")  # kind's role of the node it runs on
    return archive_image(archive)[1]


def simulate(
    cluster: str,
    count: int,
    kube: Kube,
    runner: Runner,
    cache: Cache,
    progress: Progress,
    *,
    timeout: float = READY_TIMEOUT,
) -> Converged:
    """Exactly `count` simulated nodes in the kind cluster `cluster`, kwok's controller with them (none for 0)."""
    image_id = load_kwok(cluster, runner, cache, progress) if count else ""
    with progress.step(f"{count} simulated node(s) (kwok)"):
        done = converge(kube, count, image_id=image_id, timeout=timeout, say=progress.info)
    if done.created or done.deleted:
        progress.info(f"simulated nodes: {len(done.created)} created, {len(done.deleted)} deleted")
    return done
