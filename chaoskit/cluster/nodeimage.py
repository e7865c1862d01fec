"""The kind node image, assembled offline: Debian rootfs + our node files + Kubernetes binaries + preloaded images.

Why not `kind build node-image`: it pulls a base image and uses `ctr images
import --label`, which the node's containerd 1.6 lacks. Instead the rootfs is
laid out on the host, images go into its containerd store by running the
host's containerd (same Debian version) against that directory, and the tree
becomes a Docker image with `docker import`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from chaoskit.cluster import versions as v
from chaoskit.cluster.assets import images_dir
from chaoskit.cluster.cache import cache_key, tree_digest
from chaoskit.errors import ToolError
from chaoskit.seams.shell import Runner, end, spawn

NODE_IMAGE_REPO = "chaoskit/node"
NODE_IMAGE_LABEL = "dev.chaoskit.node-image"

# docker import writes no image config; these are what kind's node containers expect. `docker import --change`
# refuses STOPSIGNAL, so they are applied by a one-line-per-instruction docker build on top of the import.
IMAGE_CHANGES = (
    "ENV container=docker",
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "STOPSIGNAL SIGRTMIN+3",
    'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]',
)

# Units that make no sense in a node container (timers, getty, udev) are not started.
_UNWANTED_WANTS = ("timers.target.wants", "getty.target.wants", "sysinit.target.wants/systemd-tmpfiles-setup.service")
_ENABLED_UNITS = (
    "containerd.service",
    "kubelet.service",
    "chaoskit-kubelet-disk.service",
    "chaoskit-dns-relay.service",
)
_KUBE_BINARIES = ("kubeadm", "kubelet", "kubectl")


@dataclass(frozen=True)
class NodeInputs:
    rootfs: Path  # node rootfs tarball
    kube_bin: Path  # directory with the Kubernetes binaries
    crictl_bin: Path
    image_tars: Sequence[Path]


def node_image_tag(inputs: NodeInputs, repo: str = NODE_IMAGE_REPO) -> str:
    key = cache_key(
        str(inputs.rootfs.parent.name),
        inputs.kube_bin.name,
        inputs.crictl_bin.name,
        *(t.parent.name for t in inputs.image_tars),
        tree_digest(images_dir() / "node"),
        repr(IMAGE_CHANGES),
    )
    return f"{repo}:{v.KUBERNETES}-{key}"


def image_exists(runner: Runner, ref: str) -> bool:
    return runner.run(["docker", "image", "inspect", ref], check=False).returncode == 0


def build(inputs: NodeInputs, runner: Runner, work_root: Path, repo: str = NODE_IMAGE_REPO) -> str:
    """Build (or find) the node image and return its tag."""
    tag = node_image_tag(inputs, repo)
    if image_exists(runner, tag):
        return tag
    work_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="node-", dir=work_root) as tmp:
        tree = Path(tmp) / "rootfs"
        tree.mkdir()
        runner.run(["tar", "--numeric-owner", "-xpf", str(inputs.rootfs), "-C", str(tree)])
        _lay_out(tree, inputs, runner)
        _preload(tree, inputs.image_tars, runner, Path(tmp))
        tar = Path(tmp) / "node.tar"
        runner.run(["tar", "--numeric-owner", "-C", str(tree), "-cf", str(tar), "."])
        imported = f"{tag}-rootfs"
        runner.run(["docker", "import", str(tar), imported])
        dockerfile = "\n".join((f"FROM {imported}", *IMAGE_CHANGES, f"LABEL {NODE_IMAGE_LABEL}={v.KUBERNETES}", ""))
        ctx = Path(tmp) / "context"
        ctx.mkdir()
        (ctx / "Dockerfile").write_text(dockerfile)
        runner.run(["docker", "build", "--network", "none", "-t", tag, str(ctx)])
        runner.run(["docker", "rmi", imported])
    _prune_older(runner, tag, repo)
    return tag


def _prune_older(runner: Runner, keep: str, repo: str) -> None:
    """Drop node images of earlier builds (about 1 GB each); one a cluster still runs on is refused and kept."""
    out = runner.run(["docker", "images", repo, "--format", "{{.Repository}}:{{.Tag}}"], check=False).stdout
    for ref in out.split():
        if ref != keep:
            runner.run(["docker", "rmi", ref], check=False)


def _lay_out(tree: Path, inputs: NodeInputs, runner: Runner) -> None:
    shutil.copytree(images_dir() / "node", tree, dirs_exist_ok=True, symlinks=True)
    for name in _KUBE_BINARIES:
        shutil.copy2(inputs.kube_bin / name, tree / "usr/bin" / name)
    shutil.copy2(inputs.crictl_bin / "crictl", tree / "usr/local/bin/crictl")
    (tree / "kind/version").write_text(f"{v.KUBERNETES}\n")
    (tree / "kind/chaoskit").mkdir(parents=True, exist_ok=True)
    (tree / "etc/kubernetes/manifests").mkdir(parents=True, exist_ok=True)
    (tree / "etc/cni/net.d").mkdir(parents=True, exist_ok=True)
    # containerd's base spec without process.rlimits: pods should not inherit RLIMIT_NOFILE=1024.
    spec = json.loads(runner.run(["ctr", "oci", "spec"]).stdout)
    spec["process"].pop("rlimits", None)
    (tree / "etc/containerd/cri-base.json").write_text(json.dumps(spec, indent=2))
    opt_cni = tree / "opt/cni"
    opt_cni.mkdir(parents=True, exist_ok=True)
    if not (opt_cni / "bin").exists():
        (opt_cni / "bin").symlink_to("/usr/lib/cni")  # tools that assume /opt/cni/bin still find the plugins
    systemd = tree / "etc/systemd/system"
    for unwanted in _UNWANTED_WANTS:
        target = systemd / unwanted
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
    wants = systemd / "multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    for unit in _ENABLED_UNITS:
        link = wants / unit
        if link.exists() or link.is_symlink():
            link.unlink()
        link.symlink_to(f"/etc/systemd/system/{unit}")
    for masked in ("systemd-binfmt.service", "systemd-udevd.service", "apt-daily.service", "apt-daily-upgrade.service"):
        m = systemd / masked
        if not m.exists():
            m.symlink_to("/dev/null")
    journald = tree / "etc/systemd/journald.conf"
    journald.write_text(journald.read_text() + "\nReadKMsg=no\n")  # the host's kernel log is not the node's
    sbin_init = tree / "sbin/init"
    if not (sbin_init.exists() or sbin_init.is_symlink()):
        sbin_init.symlink_to("/lib/systemd/systemd")


def _preload(tree: Path, image_tars: Sequence[Path], runner: Runner, tmp: Path) -> None:
    """Import images into the node's containerd store (namespace k8s.io) with the host's containerd."""
    state, sock = tmp / "ctrd-state", tmp / "ctrd.sock"
    config = tmp / "ctrd.toml"
    # Only the content and metadata stores are needed; CRI would try to set up networking.
    config.write_text(
        'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.internal.v1.opt"]\n'
    )
    root = tree / "var/lib/containerd"
    root.mkdir(parents=True, exist_ok=True)
    argv = ["containerd", "--config", str(config), "--root", str(root), "--state", str(state), "--address", str(sock)]
    proc = spawn(argv, tmp / "ctrd.log")
    try:
        deadline = time.monotonic() + 30
        while not sock.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ToolError(f"host containerd for image preloading did not start; see {tmp / 'ctrd.log'}")
            time.sleep(0.2)
        for tar in image_tars:
            runner.run(
                [
                    "ctr",
                    "--address",
                    str(sock),
                    "--namespace",
                    "k8s.io",
                    "images",
                    "import",
                    "--all-platforms",
                    "--no-unpack",
                    "--digests",
                    str(tar),
                ]
            )
    finally:
        end(proc, timeout=20)
    os.sync()


def image_refs(runner: Runner, tag: str) -> Mapping[str, str]:
    out = runner.run(["docker", "image", "inspect", tag, "--format", "{{json .Config.Labels}}"]).stdout
    return json.loads(out or "{}") or {}
