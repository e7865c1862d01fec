"""Debian's prometheus and promtool binaries, unpacked into the cache; never the Debian service.

No container registry is reachable here, so Prometheus cannot run as the usual in-cluster image; Debian ships it
(prometheus + promtool, one package). We take the binaries out of the .deb (`apt-get download` + `dpkg-deb -x`)
into the cache, keyed by the package version.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from chaoskit.cluster.cache import Cache
from chaoskit.errors import MissingDependency
from chaoskit.seams.shell import Runner

PACKAGE = "prometheus"


@dataclass(frozen=True)
class Install:
    version: str
    prometheus: Path
    promtool: Path


def candidate_version(runner: Runner) -> str | None:
    """The version apt would install, from `apt-cache policy`; None when apt knows no such package."""
    out = runner.run(["apt-cache", "policy", PACKAGE], check=False).stdout
    for line in out.splitlines():
        key, _, value = line.strip().partition(":")
        if key == "Candidate":
            return None if value.strip() in ("", "(none)") else value.strip()
    return None


def install(runner: Runner, cache: Cache) -> Install:
    """Debian's prometheus and promtool binaries, from the cache or downloaded and unpacked into it (atomically)."""
    if shutil.which("apt-get") is None:
        on_path = shutil.which("prometheus"), shutil.which("promtool")
        if on_path[0] and on_path[1]:
            return Install("path", Path(on_path[0]), Path(on_path[1]))
        raise MissingDependency(
            "Prometheus is not available: chaoskit takes it from Debian's `prometheus` package (apt-get download), "
            "but this host has no apt-get and no prometheus/promtool on PATH"
        )
    version = candidate_version(runner)
    if version is None and os.geteuid() == 0:
        runner.run(["apt-get", "update", "-qq"], env={"DEBIAN_FRONTEND": "noninteractive"}, timeout=300)
        version = candidate_version(runner)
    if version is None:
        raise MissingDependency(
            "Prometheus is not available: apt knows no candidate for the Debian package `prometheus` "
            "(`apt-cache policy prometheus`); run `apt-get update` as root, or add a Debian suite that ships it"
        )
    if (hit := cache.get("prometheus", PACKAGE, version)) is not None:
        return _unpacked(hit, version)
    with cache.entry("prometheus", PACKAGE, version) as out:
        # root's cache dir is closed to apt's sandbox user: download as root instead of warning about it
        sandbox = ["-o", "APT::Sandbox::User=root"] if os.geteuid() == 0 else []
        runner.run(["apt-get", *sandbox, "download", f"{PACKAGE}={version}"], cwd=out, timeout=600)
        debs = sorted(out.glob(f"{PACKAGE}_*.deb"))
        if not debs:
            raise MissingDependency(f"apt-get download {PACKAGE}={version} left no .deb in {out}")
        runner.run(["dpkg-deb", "-x", str(debs[0]), str(out / "root")], timeout=300)
        for deb in debs:
            deb.unlink()
        _unpacked(out, version)
    return _unpacked(cache.path("prometheus", PACKAGE, version), version)


def _unpacked(root: Path, version: str) -> Install:
    found = Install(version, root / "root/usr/bin/prometheus", root / "root/usr/bin/promtool")
    for binary in (found.prometheus, found.promtool):
        if not os.access(binary, os.X_OK):
            raise MissingDependency(f"the Debian package {PACKAGE} {version} holds no executable {binary.name}")
    return found


def check_rules(runner: Runner, tools: Install, path: Path) -> str:
    """`promtool check rules`; CommandError (with promtool's findings) when the file is invalid."""
    return runner.run([str(tools.promtool), "check", "rules", str(path)], timeout=60).output


def check_config(runner: Runner, tools: Install, path: Path) -> str:
    return runner.run([str(tools.promtool), "check", "config", str(path)], timeout=60).output
