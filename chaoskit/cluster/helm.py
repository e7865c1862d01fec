"""helm, for the chart in deploy/helm: built from the module proxy at the pinned version (no release download
reaches this host) and offered as <cache>/bin/helm beside kind and kubectl.

`python -m chaoskit.cluster.helm` builds it (cached: a warm run only asks Go its version) and prints its path;
`make helm` runs that, and `make test` runs `make helm` so the chart's tests never skip in CI.
"""

from __future__ import annotations

from pathlib import Path

from chaoskit.cluster import gobuild
from chaoskit.cluster.cache import Cache, default_root
from chaoskit.seams.shell import Runner, SubprocessRunner

TARGET = gobuild.TARGETS["helm"]


def path(cache: Cache) -> Path:
    """Where the built helm is offered (the link may be absent or stale: `ensure` makes it)."""
    return cache.root / "bin" / "helm"


def ensure(cache: Cache, runner: Runner) -> Path:
    """Build helm when its pinned version is not cached yet, point <cache>/bin/helm at it; its path."""
    built = gobuild.build(TARGET, cache, runner, go=gobuild.go_version(runner)) / "helm"
    link = path(cache)
    if not (link.is_symlink() and link.readlink() == built):
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(built)
    return link


def main() -> None:
    print(ensure(Cache(default_root()), SubprocessRunner()))


if __name__ == "__main__":
    main()
