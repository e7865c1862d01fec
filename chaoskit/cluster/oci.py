"""Container images written directly as docker-archive tarballs (what `docker save` makes).

Both `docker load` and containerd's `ctr images import` read this format, so
the images of the control plane and add-ons are built without a registry or
a Docker build. Output is deterministic: same inputs, same bytes.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class FileEntry:
    """One file to place in the image: from `source` on disk, or literal `data`."""

    path: str
    source: Path | None = None
    data: bytes | None = None
    mode: int = 0o755


@dataclass(frozen=True)
class ImageSpec:
    name: str  # full reference, e.g. registry.k8s.io/kube-apiserver:v1.34.4
    files: tuple[FileEntry, ...] = ()
    base_rootfs: Path | None = None  # a rootfs tarball to start from (else an empty image)
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[str, ...] = (PATH_ENV,)
    labels: dict[str, str] = field(default_factory=dict)


def _add(tar: tarfile.TarFile, info: tarfile.TarInfo, data: bytes | None = None) -> None:
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(data) if data is not None else None)


def _clean(name: str) -> str:
    """'./usr/bin/' -> 'usr/bin' (tar members of a rootfs are relative to its root)."""
    name = name.removeprefix("./").lstrip("/").rstrip("/")
    return "" if name == "." else name


def _parents(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def layer_tar(files: Sequence[FileEntry], base_rootfs: Path | None = None) -> bytes:
    """One uncompressed layer: the base rootfs (if any) with the files laid over it."""
    buf = io.BytesIO()
    replaced = {f.path.strip("/") for f in files}
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        seen: set[str] = set()
        if base_rootfs is not None:
            with tarfile.open(base_rootfs) as base:
                for member in base:
                    name = _clean(member.name)
                    if not name or name in replaced or name in seen:
                        continue
                    seen.add(name)
                    member.name = name
                    data = None
                    if member.islnk():
                        member.linkname = _clean(member.linkname)
                        if member.linkname in replaced:  # its target is replaced below: keep the old bytes as a copy
                            data = base.extractfile(member).read()  # type: ignore[union-attr]
                            member.type, member.size, member.linkname = tarfile.REGTYPE, len(data), ""
                    elif member.isreg():
                        data = base.extractfile(member).read()  # type: ignore[union-attr]
                    _add(tar, member, data)
        for entry in sorted(files, key=lambda f: f.path):
            for d in _parents(entry.path):
                if d not in seen:
                    seen.add(d)
                    info = tarfile.TarInfo(d)
                    info.type = tarfile.DIRTYPE
                    info.mode = 0o755
                    _add(tar, info)
            data = entry.data if entry.data is not None else entry.source.read_bytes()  # type: ignore[union-attr]
            info = tarfile.TarInfo(entry.path.strip("/"))
            info.size = len(data)
            info.mode = entry.mode
            _add(tar, info, data)
    return buf.getvalue()


def _config(spec: ImageSpec, diff_id: str) -> bytes:
    cfg: dict[str, object] = {"Env": list(spec.env)}
    if spec.entrypoint:
        cfg["Entrypoint"] = list(spec.entrypoint)
    if spec.cmd:
        cfg["Cmd"] = list(spec.cmd)
    if spec.labels:
        cfg["Labels"] = dict(sorted(spec.labels.items()))
    doc = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": cfg,
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "chaoskit"}],
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def write_archive(spec: ImageSpec, dest: Path) -> str:
    """Write spec as a docker-archive tarball at dest; return the image ID (config digest)."""
    layer = layer_tar(spec.files, spec.base_rootfs)
    diff_id = hashlib.sha256(layer).hexdigest()
    config = _config(spec, diff_id)
    image_id = hashlib.sha256(config).hexdigest()
    manifest = [{"Config": f"{image_id}.json", "RepoTags": [spec.name], "Layers": [f"{diff_id}/layer.tar"]}]
    members: Iterable[tuple[str, bytes | None]] = [
        (f"{diff_id}", None),
        (f"{diff_id}/layer.tar", layer),
        (f"{image_id}.json", config),
        ("manifest.json", json.dumps(manifest).encode()),
    ]
    tmp = dest.with_name(dest.name + ".part")
    with tarfile.open(tmp, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
            else:
                info.size = len(data)
                info.mode = 0o644
            _add(tar, info, data)
    tmp.rename(dest)
    return image_id
