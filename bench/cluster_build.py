"""Benchmark: cold build time (empty caches), warm `cluster up` time, node image size, idle cluster memory.

    python bench/cluster_build.py [--skip-cold] [--name chaoskit-bench]

Cold means an empty chaoskit cache, Go build cache and Go module cache (all in a temporary directory); the
Debian mirror and Go proxy are still the network's. The warm run creates and deletes its own cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from chaoskit.cluster.build import build_all
from chaoskit.cluster.cache import Cache, default_root
from chaoskit.progress import Progress
from chaoskit.seams.shell import SubprocessRunner

_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "kB": 1000, "MB": 1000**2, "GB": 1000**3}


def cold_build() -> float:
    with tempfile.TemporaryDirectory(prefix="chaoskit-bench-") as tmp:
        env = {"GOCACHE": f"{tmp}/go-build", "GOMODCACHE": f"{tmp}/gomod", "GOFLAGS": "-modcacherw"}
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        t0 = time.monotonic()
        try:
            art = build_all(
                Cache(Path(tmp) / "cache"),
                SubprocessRunner(),
                Progress(),
                offline_node_image=True,
                repo="chaoskit/node-bench",
            )
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        seconds = time.monotonic() - t0
        subprocess.run(["docker", "rmi", "-f", str(art.node_image)], capture_output=True)
    return seconds


def chaoskit(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "chaoskit", *args], check=True)


def memory_of(cluster: str) -> float:
    ids = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label=io.x-k8s.kind.cluster={cluster}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    out = subprocess.run(
        ["docker", "stats", "--no-stream", "--format", "{{json .}}", *ids], capture_output=True, text=True, check=True
    ).stdout
    total = 0.0
    for line in out.splitlines():
        used = json.loads(line)["MemUsage"].split("/")[0].strip()
        m = re.match(r"([\d.]+)\s*([A-Za-z]+)", used)
        if m:
            total += float(m.group(1)) * _UNITS.get(m.group(2), 1)
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument("--name", default="chaoskit-bench")
    ap.add_argument(
        "--idle-wait", type=float, default=60.0, help="seconds to let the cluster settle before measuring memory"
    )
    args = ap.parse_args()
    figures: dict[str, str] = {}
    if not args.skip_cold:
        figures["cold build (empty caches), s"] = f"{cold_build():.0f}"
    chaoskit("cluster", "down", "--cluster", args.name)
    t0 = time.monotonic()
    chaoskit("cluster", "up", "--cluster", args.name, "--image", "build")
    figures["warm cluster up (cached builds, new cluster), s"] = f"{time.monotonic() - t0:.0f}"
    image = subprocess.run(
        ["docker", "ps", "--filter", f"label=io.x-k8s.kind.cluster={args.name}", "--format", "{{.Image}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[0]
    size = int(
        subprocess.run(
            ["docker", "image", "inspect", image, "--format", "{{.Size}}"], capture_output=True, text=True, check=True
        ).stdout
    )
    figures["node image size, MB"] = f"{size / 1e6:.0f}"
    time.sleep(args.idle_wait)
    figures["idle cluster memory (3 nodes), MiB"] = f"{memory_of(args.name) / 2**20:.0f}"
    chaoskit("cluster", "down", "--cluster", args.name)
    cache = default_root()
    figures["cache size, MB"] = (
        f"{sum(f.stat().st_size for f in cache.rglob('*') if f.is_file()) / 1e6:.0f}" if cache.exists() else "0"
    )
    width = max(map(len, figures))
    for k, v in figures.items():
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    if shutil.which("docker") is None:
        sys.exit("docker is needed")
    main()
