"""The kind provider: create, delete, list and inspect kind clusters through the kind binary and Docker.

kind identifies a cluster's node containers by the label io.x-k8s.kind.cluster (seams/nodecontainers.py lists them);
chaoskit's own node image also carries dev.chaoskit.node-image.
"""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass
from pathlib import Path

from chaoskit.seams.nodecontainers import node_containers
from chaoskit.seams.shell import Runner


@dataclass(frozen=True)
class Kind:
    runner: Runner
    binary: Path

    def clusters(self) -> list[str]:
        out = self.runner.run([str(self.binary), "get", "clusters", "-q"], check=False).stdout
        return [line.strip() for line in out.splitlines() if line.strip()]

    def create(self, name: str, config: Path, image: str, *, log: Path | None = None) -> None:
        self.runner.run(
            [str(self.binary), "create", "cluster", "--name", name, "--config", str(config), "--image", image],
            log=log,
        )

    def delete(self, name: str) -> None:
        self.runner.run([str(self.binary), "delete", "cluster", "--name", name])

    def load_archive(self, name: str, archive: Path, *, role: str | None = None) -> None:
        """`kind load image-archive` into the nodes that do not hold the archive's image yet (its tags at its ID);
        with `role`, only into that role's nodes (an image whose pods run on the control plane alone).

        kind imports an archive whatever the nodes hold, about 5 s a node for chaoskit's own image, and a second
        `chaoskit install` or `cluster up` loads the same bytes again."""
        tags, image_id = archive_image(archive)
        every = node_containers(self.runner, name)
        nodes = [n.name for n in every if role is None or n.role == role]
        missing = [n for n in nodes if not tags or not all(self._holds(n, tag, image_id) for tag in tags)]
        if not missing:
            return
        only = ["--nodes", ",".join(missing)] if len(missing) < len(every) else []
        self.runner.run([str(self.binary), "load", "image-archive", "--name", name, *only, str(archive)])

    def _holds(self, node: str, tag: str, image_id: str) -> bool:
        done = self.runner.run(["docker", "exec", node, "crictl", "inspecti", "-o", "json", tag], check=False)
        try:
            return bool(image_id) and json.loads(done.stdout)["status"]["id"] == image_id
        except (ValueError, KeyError, TypeError):
            return False

    def export_logs(self, name: str, dest: Path) -> None:
        self.runner.run([str(self.binary), "export", "logs", "--name", name, str(dest)])


def archive_image(archive: Path) -> tuple[list[str], str]:
    """The tags and the image ID (sha256:<config digest>) of a docker-archive tarball; ([], "") if unreadable."""
    try:
        with tarfile.open(archive) as tar:
            member = tar.extractfile("manifest.json")
            (entry,) = json.loads(member.read()) if member else [{}]
    except (OSError, KeyError, ValueError, tarfile.TarError):
        return [], ""
    config = str(entry.get("Config", "")).removeprefix("blobs/sha256/").removesuffix(".json")
    return list(entry.get("RepoTags") or []), f"sha256:{config}" if config else ""


def container_addresses(runner: Runner, cluster: str) -> dict[str, set[str]]:
    """Each node container's addresses on its Docker networks (they may change when Docker restarts)."""
    names = [n.name for n in node_containers(runner, cluster)]
    if not names:
        return {}
    fmt = "{{.Name}}{{range .NetworkSettings.Networks}} {{.IPAddress}} {{.GlobalIPv6Address}}{{end}}"
    out = runner.run(["docker", "inspect", "-f", fmt, *names]).stdout
    return {name.lstrip("/"): set(ips) for name, *ips in (line.split() for line in out.splitlines() if line.strip())}


def control_plane(runner: Runner, cluster: str) -> str:
    for node in node_containers(runner, cluster):
        if node.role == "control-plane":
            return node.name
    raise LookupError(f"cluster {cluster!r} has no control-plane node container")


def node_kubectl(runner: Runner, cluster: str, *args: str, input: bytes | None = None) -> str:
    """kubectl run inside the control-plane node with its admin credentials (no host kubectl needed)."""
    argv = [
        "docker",
        "exec",
        "-i",
        control_plane(runner, cluster),
        "kubectl",
        "--kubeconfig=/etc/kubernetes/admin.conf",
        *args,
    ]
    return runner.run(argv, input=input).stdout
