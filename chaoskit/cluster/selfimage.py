"""chaoskit's own image, for the operator Deployment and the node agent DaemonSet: Debian's python3 with chaoskit
and the exact versions of its dependencies this host runs, built offline like every other image here.

Python from Debian (bookworm: 3.11) and nsenter from util-linux come from a debootstrap rootfs; the dependencies
are PyPI wheels for CPython 3.11 on this machine's architecture, pinned to what `pip` finds installed beside the
running chaoskit; chaoskit's own packages are copied from where it runs (a source tree or an installed wheel).
Each part is cached by what it is made of.
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import platform
import re
import sys
from pathlib import Path

import chaoskit
from chaoskit import __version__
from chaoskit.cluster import debian
from chaoskit.cluster.assets import deploy_dir
from chaoskit.cluster.cache import Cache, cache_key
from chaoskit.cluster.oci import PATH_ENV, FileEntry, ImageSpec, write_archive
from chaoskit.seams.shell import Runner

CHAOSKIT_IMAGE = f"docker.io/chaoskit/chaoskit:v{__version__}"
PYTHON = debian.Rootfs("python", ("python3", "util-linux", "ca-certificates"))
PYTHON_VERSION = "3.11"  # bookworm's python3
SITE = "/opt/chaoskit/site"
PACKAGES = ("chaoskit", "chaoskit_operator")  # what the wheel ships


def _name(req: str) -> tuple[str, str]:
    """('name', 'extra or marker text') of a Requires-Dist line."""
    m = re.match(r"\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?[^;]*(;.*)?$", req)
    if m is None:
        raise ValueError(f"cannot read requirement {req!r}")
    return m.group(1), m.group(3) or ""


def pinned_requirements(root: str = "chaoskit") -> list[str]:
    """`name==version` for chaoskit's dependency closure as installed here (extras and test tools left out)."""
    pins: dict[str, str] = {}
    todo = [root]
    while todo:
        dist = md.distribution(todo.pop())
        for req in dist.requires or []:
            name, marker = _name(req)
            if "extra ==" in marker or "extra==" in marker:
                continue
            if "python_version" in marker and not _python_marker_holds(marker):
                continue
            key = name.lower().replace("_", "-")
            if key in pins:
                continue
            try:
                pins[key] = md.version(name)
            except md.PackageNotFoundError:
                continue  # a platform-specific dependency this host does not need either
            todo.append(name)
    return [f"{name}=={version}" for name, version in sorted(pins.items())]


def _python_marker_holds(marker: str) -> bool:
    m = re.search(r'python_version\s*(<=|>=|<|>|==|!=)\s*"([0-9.]+)"', marker)
    if m is None:
        return True
    target = tuple(int(x) for x in PYTHON_VERSION.split("."))
    bound = tuple(int(x) for x in m.group(2).split("."))
    return bool(
        {
            "<": target < bound,
            "<=": target <= bound,
            ">": target > bound,
            ">=": target >= bound,
            "==": target == bound,
            "!=": target != bound,
        }[m.group(1)]
    )


def site_packages(cache: Cache, runner: Runner) -> Path:
    """The dependencies, installed for the image's Python into a cached folder."""
    pins = pinned_requirements()
    arch = platform.machine()
    # compiled when this Python is the image's (the same bytecode), as the image sets PYTHONDONTWRITEBYTECODE: an
    # agent or the operator then starts in about 1 s of CPU instead of 4 (the kubernetes client alone is ~700 modules)
    compiled = f"{sys.version_info.major}.{sys.version_info.minor}" == PYTHON_VERSION
    key = cache_key(PYTHON_VERSION, arch, f"compiled={compiled}", *pins)
    if (hit := cache.get("site", "chaoskit-deps", key)) is not None:
        return hit / "site"
    with cache.entry("site", "chaoskit-deps", key) as out:
        runner.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--no-compile",
                "--target",
                str(out / "site"),
                "--only-binary=:all:",
                "--python-version",
                PYTHON_VERSION,
                "--implementation",
                "cp",
                "--abi",
                f"cp{PYTHON_VERSION.replace('.', '')}",
                "--abi",
                "abi3",
                "--abi",
                "none",
                "--platform",
                f"manylinux_2_36_{arch}",
                "--platform",
                f"manylinux_2_28_{arch}",
                "--platform",
                f"manylinux_2_17_{arch}",
                "--platform",
                f"manylinux2014_{arch}",
                "--platform",
                "any",
                *pins,
            ],
            log=out.parent / f"pip-{key}.log",
        )
        if compiled:  # unchecked-hash: the image's files carry mtime 0, which a timestamped .pyc would not match
            runner.run(
                [
                    sys.executable,
                    "-m",
                    "compileall",
                    "-q",
                    "-j",
                    "0",
                    "--invalidation-mode",
                    "unchecked-hash",
                    "-d",
                    SITE,
                    str(out / "site"),
                ],
                log=out.parent / f"compileall-{key}.log",
            )
    return cache.path("site", "chaoskit-deps", key) / "site"


def _package_dirs() -> list[Path]:
    operator = importlib.util.find_spec("chaoskit_operator")  # ships in the same wheel; found, not imported
    if operator is None or operator.origin is None:
        raise LookupError("chaoskit_operator is not installed beside chaoskit")
    return [Path(chaoskit.__file__).parent, Path(operator.origin).parent]


def _files(root: Path, under: str, *, compiled: bool = False) -> list[FileEntry]:
    """Files under `root`, placed under `under`; compiled caches only when asked (ours differ between checkouts)."""
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or ("__pycache__" in rel.parts and not compiled) or rel.parts[0] == "bin":
            continue
        mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
        out.append(FileEntry(f"{under}/{rel}", source=path, mode=mode))
    return out


def _identity(f: FileEntry) -> tuple[str, str, bytes]:
    assert f.source is not None
    return f.path, oct(f.mode), f.source.read_bytes()


def build(cache: Cache, runner: Runner) -> Path:
    """The image as a docker-archive tarball (for `kind load image-archive`), cached by everything in it."""
    base = debian.build(PYTHON, cache, runner)
    deps = site_packages(cache, runner)
    own = [f for pkg in _package_dirs() for f in _files(pkg, f"{SITE}/{pkg.name}")]
    # install's manifests where a wheel keeps them: the chart's setup hook labels its namespace from them
    own += _files(deploy_dir(), f"{SITE}/chaoskit/_assets/deploy/chaoskit")
    # keyed by exactly what goes in (compiled caches left out: they differ between checkouts of the same tree)
    key = cache_key(PYTHON.key(), deps.parent.name, *(part for f in own for part in _identity(f)))
    if (hit := cache.get("images", "chaoskit", key)) is not None:
        return hit / "image.tar"
    files = _files(deps, SITE, compiled=True) + own
    spec = ImageSpec(
        name=CHAOSKIT_IMAGE,
        files=tuple(files),
        base_rootfs=base,
        entrypoint=("python3", "-m", "chaoskit"),
        env=(PATH_ENV, f"PYTHONPATH={SITE}", "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"),
        labels={"dev.chaoskit.image": CHAOSKIT_IMAGE},
    )
    with cache.entry("images", "chaoskit", key) as out:
        write_archive(spec, out / "image.tar")
    return cache.path("images", "chaoskit", key) / "image.tar"
