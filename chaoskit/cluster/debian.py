"""Debian root filesystems made with debootstrap from Debian's mirror, cached as tarballs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chaoskit.cluster import versions as v
from chaoskit.cluster.cache import Cache, cache_key
from chaoskit.seams.shell import Runner

# Dropped from every rootfs: documentation and apt state only weigh on the image.
_PRUNE = ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale", "var/cache/apt", "var/lib/apt/lists")


@dataclass(frozen=True)
class Rootfs:
    name: str
    packages: tuple[str, ...]
    suite: str = v.DEBIAN_SUITE
    mirror: str = v.DEBIAN_MIRROR

    def key(self) -> str:
        return cache_key(self.name, self.suite, self.mirror, *sorted(self.packages))


# The kind node: systemd as PID 1, containerd + runc, CNI plugins and the dataplane tools kube-proxy and faults use.
NODE = Rootfs(
    "node",
    (
        "systemd",
        "systemd-sysv",
        "dbus",
        "containerd",
        "runc",
        "containernetworking-plugins",
        "iptables",
        "nftables",
        "conntrack",
        "ipset",
        "kmod",
        "ca-certificates",
        "procps",
        "iproute2",
        "util-linux",
        "mount",
        "ebtables",
        "libseccomp2",
        "curl",
        "socat",
        "ethtool",
        "lsof",
        "less",
        "e2fsprogs",
        "openssl",
    ),
)

# kube-proxy's image: it shells out to iptables/nft/conntrack, so it needs a userland (like distroless-iptables).
PROXY_BASE = Rootfs("proxy-base", ("iptables", "nftables", "conntrack", "ipset", "kmod"))


def build(rootfs: Rootfs, cache: Cache, runner: Runner) -> Path:
    """Return the path of the rootfs tarball, running debootstrap when it is not cached."""
    key = rootfs.key()
    if (hit := cache.get("rootfs", rootfs.name, key)) is not None:
        return hit / "rootfs.tar"
    with cache.entry("rootfs", rootfs.name, key) as out:
        tree = out / "tree"
        runner.run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(rootfs.packages)}",
                rootfs.suite,
                str(tree),
                rootfs.mirror,
            ],
            log=out.parent / f"debootstrap-{rootfs.name}-{key}.log",
        )
        runner.run(["rm", "-rf", *(str(tree / p) for p in _PRUNE)])
        runner.run(["tar", "--numeric-owner", "-C", str(tree), "-cf", str(out / "rootfs.tar"), "."])
        runner.run(["rm", "-rf", str(tree)])
    return cache.path("rootfs", rootfs.name, key) / "rootfs.tar"
