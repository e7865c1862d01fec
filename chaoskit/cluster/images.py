"""The container images the cluster needs offline, built as docker-archive tarballs.

Control-plane and add-on images carry exactly the names kubeadm v1.34 asks for
(`kubeadm config images list`), so kubeadm and containerd find them preloaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from chaoskit import __version__
from chaoskit.cluster import versions as v
from chaoskit.cluster.cache import Cache, cache_key
from chaoskit.cluster.oci import FileEntry, ImageSpec, write_archive

WORKLOAD_IMAGE = f"docker.io/chaoskit/workload:v{__version__}"
NETD_IMAGE = f"docker.io/chaoskit/netd:v{__version__}"
METRICS_SERVER_IMAGE = f"registry.k8s.io/metrics-server/metrics-server:{v.METRICS_SERVER}"
PAUSE_IMAGE = f"registry.k8s.io/pause:{v.PAUSE}"
KWOK_IMAGE = f"docker.io/chaoskit/kwok:{v.KWOK}"


@dataclass(frozen=True)
class ImageRecipe:
    """An image from one binary: `binary` comes from the Go target `target`."""

    name: str
    target: str
    binary: str
    path: str
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    base: str | None = None  # a debian.Rootfs name to start from


def _kube(component: str, base: str | None = None) -> ImageRecipe:
    # kubeadm's static pods run the bare command name, so it must be on PATH.
    return ImageRecipe(
        f"registry.k8s.io/{component}:{v.KUBERNETES}", "kubernetes", component, f"/usr/local/bin/{component}", base=base
    )


# Preloaded in every node.
NODE_IMAGES: tuple[ImageRecipe, ...] = (
    _kube("kube-apiserver"),
    _kube("kube-controller-manager"),
    _kube("kube-scheduler"),
    _kube("kube-proxy", base="proxy-base"),
    ImageRecipe(f"registry.k8s.io/etcd:{v.ETCD_IMAGE_TAG}", "etcd", "etcd", "/usr/local/bin/etcd"),
    ImageRecipe(f"registry.k8s.io/coredns/coredns:{v.COREDNS}", "coredns", "coredns", "/coredns", ("/coredns",)),
    ImageRecipe(PAUSE_IMAGE, "pause", "pause", "/pause", ("/pause",)),
    ImageRecipe(METRICS_SERVER_IMAGE, "kubernetes", "metrics-server", "/metrics-server", ("/metrics-server",)),
    ImageRecipe(NETD_IMAGE, "netd", "netd", "/netd", ("/netd",)),
)

# Loaded into a running cluster (kind load), so changing them does not rebuild the node image.
WORKLOAD_IMAGES: tuple[ImageRecipe, ...] = (
    ImageRecipe(WORKLOAD_IMAGE, "workload", "workload", "/workload", ("/workload",), ("serve",)),
)


# The simulated nodes' controller: built and loaded (kind load) only when a cluster is asked for simulated nodes.
KWOK_RECIPE = ImageRecipe(KWOK_IMAGE, "kwok", "kwok", "/usr/local/bin/kwok", ("/usr/local/bin/kwok",))


def build(recipe: ImageRecipe, bins: Mapping[str, Path], bases: Mapping[str, Path], cache: Cache) -> Path:
    """Return the docker-archive tarball for recipe, writing it when not cached."""
    binary = bins[recipe.target] / recipe.binary
    base = bases[recipe.base] if recipe.base else None
    key = cache_key(repr(recipe), bins[recipe.target].name, base.parent.name if base else "")
    safe = recipe.name.rsplit("/", 1)[-1].replace(":", "-")
    if (hit := cache.get("images", safe, key)) is not None:
        return hit / "image.tar"
    spec = ImageSpec(
        name=recipe.name,
        files=(FileEntry(recipe.path, source=binary),),
        base_rootfs=base,
        entrypoint=recipe.entrypoint,
        cmd=recipe.cmd,
        labels={"dev.chaoskit.image": recipe.name},
    )
    with cache.entry("images", safe, key) as out:
        write_archive(spec, out / "image.tar")
    return cache.path("images", safe, key) / "image.tar"
