"""chaoskit.cluster.oci: docker-archive tarballs written without Docker."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from chaoskit.cluster.oci import PATH_ENV, FileEntry, ImageSpec, write_archive

NAME = "registry.k8s.io/kube-proxy:v1.34.4"


def _read(archive: Path) -> dict[str, bytes | None]:
    with tarfile.open(archive) as tar:
        return {m.name: (tar.extractfile(m).read() if m.isreg() else None) for m in tar}  # type: ignore[union-attr]


def _parts(archive: Path) -> tuple[dict[str, Any], dict[str, Any], bytes]:
    """(manifest entry, config, layer bytes) of a single-image archive."""
    members = _read(archive)
    (manifest,) = json.loads(members["manifest.json"])  # type: ignore[arg-type]
    config = json.loads(members[manifest["Config"]])  # type: ignore[arg-type]
    (layer_name,) = manifest["Layers"]
    return manifest, config, members[layer_name]  # type: ignore[return-value]


def _layer_members(layer: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        return {m.name: m for m in tar.getmembers()}


def _layer_file(layer: bytes, name: str) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        return tar.extractfile(name).read()  # type: ignore[union-attr]


def _rootfs(path: Path, entries: list[tuple[str, str, bytes | str]]) -> Path:
    """A rootfs tarball as debootstrap+tar make them: names like './usr/bin/'. entries: (name, type, data|linkname)."""
    with tarfile.open(path, "w") as tar:
        for name, kind, payload in entries:
            info = tarfile.TarInfo(name)
            info.mtime = 1_700_000_000
            info.uid = info.gid = 1000
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif kind == "file":
                assert isinstance(payload, bytes)
                info.size, info.mode = len(payload), 0o644
                tar.addfile(info, io.BytesIO(payload))
            elif kind == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, str(payload)
                tar.addfile(info)
            elif kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, str(payload)
                tar.addfile(info)
    return path


BASE = [
    ("./", "dir", b""),
    ("./usr/", "dir", b""),
    ("./usr/bin/", "dir", b""),
    ("./usr/bin/perl", "file", b"perl"),
    ("./usr/bin/perl5.36.0", "hardlink", "./usr/bin/perl"),
    ("./bin", "symlink", "usr/bin"),
    ("./etc/", "dir", b""),
    ("./etc/os-release", "file", b"ID=debian\n"),
    ("./etc/hostname", "file", b"base\n"),
]


@pytest.fixture
def spec(tmp_path: Path) -> ImageSpec:
    source = tmp_path / "kube-proxy"
    source.write_bytes(b"\x7fELF kube-proxy")
    return ImageSpec(
        name=NAME,
        files=(
            FileEntry("/usr/local/bin/kube-proxy", source=source),
            FileEntry("etc/chaoskit.conf", data=b"conf\n", mode=0o600),
        ),
        entrypoint=("/usr/local/bin/kube-proxy",),
        cmd=("--v=2",),
        labels={"dev.chaoskit.image": NAME},
    )


def test_manifest_names_the_image_its_config_and_its_layer(tmp_path: Path, spec: ImageSpec) -> None:
    image_id = write_archive(spec, tmp_path / "image.tar")
    manifest, _, _ = _parts(tmp_path / "image.tar")

    assert manifest["RepoTags"] == [NAME]
    assert manifest["Config"] == f"{image_id}.json"


def test_image_id_is_the_config_digest_and_diff_id_the_layer_digest(tmp_path: Path, spec: ImageSpec) -> None:
    image_id = write_archive(spec, tmp_path / "image.tar")
    manifest, config, layer = _parts(tmp_path / "image.tar")
    members = _read(tmp_path / "image.tar")

    diff_id = hashlib.sha256(layer).hexdigest()
    assert config["rootfs"] == {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]}
    assert manifest["Layers"] == [f"{diff_id}/layer.tar"]
    assert hashlib.sha256(members[manifest["Config"]]).hexdigest() == image_id  # type: ignore[arg-type]


def test_config_carries_entrypoint_cmd_env_and_labels(tmp_path: Path, spec: ImageSpec) -> None:
    write_archive(spec, tmp_path / "image.tar")
    _, config, _ = _parts(tmp_path / "image.tar")

    assert config["os"] == "linux" and config["architecture"] == "amd64"
    assert config["config"] == {
        "Entrypoint": ["/usr/local/bin/kube-proxy"],
        "Cmd": ["--v=2"],
        "Env": [PATH_ENV],
        "Labels": {"dev.chaoskit.image": NAME},
    }


def test_layer_holds_the_files_with_their_modes_and_parent_dirs(tmp_path: Path, spec: ImageSpec) -> None:
    write_archive(spec, tmp_path / "image.tar")
    _, _, layer = _parts(tmp_path / "image.tar")
    members = _layer_members(layer)

    assert members["usr/local/bin/kube-proxy"].mode == 0o755
    assert members["etc/chaoskit.conf"].mode == 0o600
    assert _layer_file(layer, "usr/local/bin/kube-proxy") == b"\x7fELF kube-proxy"
    assert _layer_file(layer, "etc/chaoskit.conf") == b"conf\n"
    for d in ("usr", "usr/local", "usr/local/bin", "etc"):
        assert members[d].isdir(), d
    assert all(m.uid == 0 and m.gid == 0 and m.mtime == 0 for m in members.values())


def test_archive_bytes_are_deterministic(tmp_path: Path, spec: ImageSpec) -> None:
    first = write_archive(spec, tmp_path / "a.tar")
    os.utime(spec.files[0].source, (1, 1))  # type: ignore[arg-type]
    second = write_archive(spec, tmp_path / "b.tar")

    assert first == second
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()


def test_archive_is_written_atomically(tmp_path: Path, spec: ImageSpec) -> None:
    write_archive(spec, tmp_path / "image.tar")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["image.tar", "kube-proxy"]


def test_empty_image_has_no_entrypoint_or_cmd(tmp_path: Path) -> None:
    write_archive(ImageSpec(name="example.dev/empty:1"), tmp_path / "image.tar")
    _, config, layer = _parts(tmp_path / "image.tar")
    assert config["config"] == {"Env": [PATH_ENV]}
    assert _layer_members(layer) == {}


# --- base rootfs -------------------------------------------------------------------------------


def test_base_rootfs_is_merged_with_dot_slash_prefixes_stripped(tmp_path: Path, spec: ImageSpec) -> None:
    base = _rootfs(tmp_path / "rootfs.tar", BASE)
    write_archive(ImageSpec(NAME, spec.files, base_rootfs=base), tmp_path / "image.tar")
    _, _, layer = _parts(tmp_path / "image.tar")
    members = _layer_members(layer)

    assert "usr/bin/perl" in members
    assert _layer_file(layer, "etc/os-release") == b"ID=debian\n"
    assert not any(n.startswith(("./", "/")) or n.endswith("/") or n in ("", ".") for n in members)
    assert "usr/local/bin/kube-proxy" in members
    assert list(members).count("usr") == 1  # the base's dir is not repeated for the files' parents
    assert members["bin"].issym() and members["bin"].linkname == "usr/bin"
    assert all(m.mtime == 0 and m.uid == 0 for m in members.values())


def test_files_override_base_rootfs_members(tmp_path: Path) -> None:
    base = _rootfs(tmp_path / "rootfs.tar", BASE)
    files = (FileEntry("/etc/hostname", data=b"chaoskit\n", mode=0o644),)
    write_archive(ImageSpec(NAME, files, base_rootfs=base), tmp_path / "image.tar")
    _, _, layer = _parts(tmp_path / "image.tar")

    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        names = tar.getnames()
    assert names.count("etc/hostname") == 1
    assert _layer_file(layer, "etc/hostname") == b"chaoskit\n"


def test_base_rootfs_hardlinks_are_kept(tmp_path: Path) -> None:
    base = _rootfs(tmp_path / "rootfs.tar", BASE)
    write_archive(ImageSpec(NAME, base_rootfs=base), tmp_path / "image.tar")
    _, _, layer = _parts(tmp_path / "image.tar")

    link = _layer_members(layer)["usr/bin/perl5.36.0"]
    assert link.islnk() and link.linkname == "usr/bin/perl"
    root = tmp_path / "extracted"
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        tar.extractall(root, filter="tar")
    assert (root / "usr/bin/perl5.36.0").stat().st_ino == (root / "usr/bin/perl").stat().st_ino


def test_base_rootfs_is_deterministic(tmp_path: Path) -> None:
    base = _rootfs(tmp_path / "rootfs.tar", BASE)
    spec = ImageSpec(NAME, (FileEntry("/usr/local/bin/x", data=b"x"),), base_rootfs=base)
    write_archive(spec, tmp_path / "a.tar")
    write_archive(spec, tmp_path / "b.tar")
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()


def test_layer_extracts_when_a_file_replaces_the_target_of_a_base_hardlink(tmp_path: Path) -> None:
    base = _rootfs(tmp_path / "rootfs.tar", BASE)
    files = (FileEntry("/usr/bin/perl", data=b"patched perl"),)
    write_archive(ImageSpec(NAME, files, base_rootfs=base), tmp_path / "image.tar")
    _, _, layer = _parts(tmp_path / "image.tar")

    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        tar.extractall(tmp_path / "extracted", filter="tar")
    assert (tmp_path / "extracted/usr/bin/perl5.36.0").exists()
