"""The kind cluster configuration: read kind-config.yaml, check its shape, set the cluster name."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import LiteralScalarString

from chaoskit.errors import UsageError

# Every chaoskit cluster needs this, whatever the user's config says: the API server must proxy aggregated APIs
# (metrics.k8s.io) to endpoints directly. Dialing a new Service's ClusterIP before kube-proxy programmed it sent a
# pooled HTTP/2 connection out of the cluster on our hosts, and the metrics API answered 404 from then on.
REQUIRED_PATCH = """apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
apiServer:
  extraArgs:
    enable-aggregator-routing: "true"
"""


@dataclass(frozen=True)
class ClusterConfig:
    name: str
    control_planes: int
    workers: int
    text: str  # what kind gets
    fingerprint: str = ""  # the config and every file it mounts: a cluster made from another one is rebuilt


def _yaml() -> YAML:
    y = YAML()
    y.preserve_quotes = True
    return y


def load(path: Path, name: str | None = None) -> ClusterConfig:
    """Parse a kind Cluster config; `name` overrides its metadata name."""
    try:
        doc: Any = _yaml().load(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read kind config {path}: {exc.strerror}") from exc
    except Exception as exc:  # ruamel raises several unrelated types; all mean "not YAML"
        raise UsageError(f"{path}: not valid YAML: {exc}") from exc
    return from_document(doc, str(path), name, base=path.resolve().parent)


def _mounts(doc: dict[str, Any], where: str, base: Path | None) -> list[Path]:
    """Every node's extraMounts host folder, a relative one taken from the config file's folder (kind wants them
    absolute); each must exist, or kind fails later with a Docker error that does not name the config."""
    found = []
    for node in doc.get("nodes") or []:
        for mount in node.get("extraMounts") or [] if isinstance(node, dict) else []:
            host = Path(str(mount.get("hostPath", "")))
            if not host.is_absolute() and base is not None:
                host = base / host
                mount["hostPath"] = str(host)
            if not host.exists():
                raise UsageError(f"{where}: extraMounts hostPath {host} does not exist")
            found.append(host)
    return found


def _fingerprint(doc: Any, mounts: list[Path]) -> str:
    """What the cluster is made from, wherever the files live: the config without its host paths, and what they
    hold."""
    digest = hashlib.sha256()
    for host in mounts:
        files = sorted(p for p in host.rglob("*") if p.is_file()) if host.is_dir() else [host]
        for f in files:
            digest.update(f.relative_to(host).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    placeless = json.loads(json.dumps(doc, default=str))
    for node in placeless.get("nodes") or []:
        for mount in node.get("extraMounts") or []:
            mount.pop("hostPath", None)
    digest.update(json.dumps(placeless, sort_keys=True).encode())
    return digest.hexdigest()[:16]


def from_document(doc: Any, where: str, name: str | None = None, base: Path | None = None) -> ClusterConfig:
    if (
        not isinstance(doc, dict)
        or doc.get("kind") != "Cluster"
        or not str(doc.get("apiVersion", "")).startswith("kind.x-k8s.io/")
    ):
        raise UsageError(f"{where}: expected a kind config (kind: Cluster, apiVersion: kind.x-k8s.io/v1alpha4)")
    nodes = doc.get("nodes") or [{"role": "control-plane"}]
    roles = [n.get("role", "control-plane") for n in nodes]
    if roles.count("control-plane") != 1:
        # more than one control plane makes kind pull its haproxy image, which is out of reach offline
        raise UsageError(
            f"{where}: chaoskit clusters have exactly one control-plane node (found {roles.count('control-plane')})"
        )
    patches = doc.setdefault("kubeadmConfigPatches", [])
    if not any("enable-aggregator-routing" in str(p) for p in patches):
        patches.append(LiteralScalarString(REQUIRED_PATCH))
    mounts = _mounts(doc, where, base)
    if name:
        doc["name"] = name
    doc.setdefault("name", "chaoskit")
    buf = io.StringIO()
    _yaml().dump(doc, buf)
    return ClusterConfig(str(doc["name"]), 1, roles.count("worker"), buf.getvalue(), _fingerprint(doc, mounts))
