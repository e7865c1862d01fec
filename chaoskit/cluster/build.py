"""Everything `cluster up` builds, each step cached: Go binaries (beside them, the rootfs), images, node image."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from chaoskit.cluster import debian, gobuild, images, nodeimage, selfimage
from chaoskit.cluster.cache import Cache
from chaoskit.errors import CommandError
from chaoskit.progress import Progress
from chaoskit.seams.shell import Runner

# Binaries needed whatever the node image: kind drives the cluster, kubectl is offered to the user.
HOST_TARGETS = ("kind", "workload")
NODE_TARGETS = ("kubernetes", "crictl", "etcd", "coredns", "pause", "netd")
# Every other binary builds beside kubernetes, the longest, which starts first: one go command leaves a core idle
# while it downloads, loads packages and links (single-threaded), which the other fills.
LONGEST = "kubernetes"


@dataclass(frozen=True)
class Artifacts:
    bins: dict[str, Path]
    workload_archives: tuple[Path, ...]
    node_image: str | None


def build_binaries(names: tuple[str, ...], cache: Cache, runner: Runner, progress: Progress) -> dict[str, Path]:
    go = gobuild.go_version(runner)
    out: dict[str, Path] = {}
    for name in names:
        target = gobuild.TARGETS[name]
        key = gobuild.target_key(target, go)
        label = f"go build {name}" + (" (cached)" if cache.get("bin", name, key) else "")
        with progress.step(label):
            out[name] = gobuild.build(target, cache, runner, go=go)
    return out


def build_rootfs(cache: Cache, runner: Runner, progress: Progress) -> dict[str, Path]:
    rootfs: dict[str, Path] = {}
    for fs in (debian.NODE, debian.PROXY_BASE):
        cached = cache.get("rootfs", fs.name, fs.key()) is not None
        with progress.step(f"debootstrap {fs.name} rootfs ({fs.suite})" + (" (cached)" if cached else "")):
            rootfs[fs.name] = debian.build(fs, cache, runner)
    prepare_self_image(cache, runner, progress)
    return rootfs


def prepare_self_image(cache: Cache, runner: Runner, progress: Progress) -> None:
    """chaoskit's own image, which `chaoskit install` loads, built while the Go builds hold the CPU: its debootstrap and
    wheel downloads wait on the mirror and the disk, and install then finds it cached. It is not the cluster's: a
    failure here is said and left to install."""
    try:
        with progress.step("chaoskit's own image, for chaoskit install"):
            selfimage.build(cache, runner)
    except (CommandError, OSError, LookupError, ValueError) as exc:
        progress.info(f"chaoskit's own image is left to chaoskit install: {exc}")


def build_all(
    cache: Cache, runner: Runner, progress: Progress, *, offline_node_image: bool, repo: str = nodeimage.NODE_IMAGE_REPO
) -> Artifacts:
    names = HOST_TARGETS + (NODE_TARGETS if offline_node_image else ())
    beside = tuple(n for n in names if n != LONGEST)
    with ThreadPoolExecutor(max_workers=2) as pool:
        # debootstrap waits on the Debian mirror and the disk, the Go builds on the CPU: side by side on a cold host
        rootfs_built = pool.submit(build_rootfs, cache, runner, progress) if offline_node_image else None
        others = pool.submit(build_binaries, beside, cache, runner, progress)  # go's caches are safe to share
        bins = build_binaries(tuple(n for n in names if n not in beside), cache, runner, progress)
        bins |= others.result()
        workload = tuple(images.build(r, bins, {}, cache) for r in images.WORKLOAD_IMAGES)
        rootfs = rootfs_built.result() if rootfs_built is not None else {}
    if not offline_node_image:
        return Artifacts(bins, workload, None)
    with progress.step("writing component images"):
        tars = [images.build(r, bins, rootfs, cache) for r in images.NODE_IMAGES]
    inputs = nodeimage.NodeInputs(rootfs["node"], bins["kubernetes"], bins["crictl"], tars)
    tag = nodeimage.node_image_tag(inputs, repo)
    cached = nodeimage.image_exists(runner, tag)
    with progress.step(f"node image {tag}" + (" (cached)" if cached else "")):
        nodeimage.build(inputs, runner, cache.root / "work", repo)
    return Artifacts(bins, workload, tag)


def build_kwok_image(cache: Cache, runner: Runner, progress: Progress) -> Path:
    """The simulated nodes' controller as a docker-archive tarball: kwok's Go build, then its image; both cached.

    Built only when simulated nodes are asked for: no other cluster needs it, and a cold build takes minutes."""
    bins = build_binaries(("kwok",), cache, runner, progress)
    with progress.step(f"image {images.KWOK_IMAGE}"):
        return images.build(images.KWOK_RECIPE, bins, {}, cache)
