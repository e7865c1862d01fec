"""A Docker engine kind can use on our hosts, started when none runs.

Our hosts' capability bounding set lacks CAP_SYS_RESOURCE, and Docker 20.10
grants every known capability under --privileged, so runc fails for every kind
node. The fix that survives a fresh host: build runc-capfilter (an OCI runtime
that drops capabilities outside the bounding set, then execs runc) and make it
the daemon's default runtime.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from chaoskit.cluster import gobuild
from chaoskit.cluster.cache import Cache
from chaoskit.errors import CommandError, MissingDependency
from chaoskit.figures import seconds
from chaoskit.progress import Progress
from chaoskit.seams.poll import poll
from chaoskit.seams.shell import Runner, spawn

RUNTIME_NAME = "chaoskit-runc"
RUNTIME_PATH = Path("/usr/local/libexec/chaoskit/runc-capfilter")
DAEMON_JSON = Path("/etc/docker/daemon.json")
LOG_DIR = Path("/var/log/chaoskit")
DEBIAN_PACKAGES = ("docker.io", "containerd", "runc")
# Tools the offline builds need on the host besides Docker (go is checked separately: it is not a Debian package here).
HOST_PACKAGES = ("debootstrap", "tar", "e2fsprogs")
_ALL_CAPS = 41  # CAP_CHECKPOINT_RESTORE is 40


def engine_running(runner: Runner) -> bool:
    return runner.run(["docker", "info", "--format", "{{.ServerVersion}}"], check=False, timeout=20).returncode == 0


def bounding_set_is_full() -> bool:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapBnd:"):
            mask = int(line.split()[1], 16)
            return all(mask & (1 << i) for i in range(_ALL_CAPS))
    return True


def default_runtime(runner: Runner) -> str:
    return runner.run(["docker", "info", "--format", "{{.DefaultRuntime}}"]).stdout.strip()


def merged_daemon_config(existing: dict[str, object]) -> dict[str, object]:
    """daemon.json with our runtime as default, keeping whatever else the host configured."""
    runtimes = dict(existing.get("runtimes", {}) or {})  # type: ignore[call-overload]
    runtimes[RUNTIME_NAME] = {"path": str(RUNTIME_PATH)}
    return {**existing, "runtimes": runtimes, "default-runtime": RUNTIME_NAME}


def _is_root() -> bool:
    return os.geteuid() == 0


def _install_packages(runner: Runner, packages: tuple[str, ...], progress: Progress) -> None:
    missing = [p for p in packages if runner.run(["dpkg", "-s", p], check=False).returncode != 0]
    if not missing:
        return
    if not _is_root() or shutil.which("apt-get") is None:
        raise MissingDependency(
            f"chaoskit needs the Debian packages {', '.join(missing)}; install them as root "
            f"(apt-get install {' '.join(missing)}) or run chaoskit as root on a Debian host"
        )
    with progress.step(f"installing {' '.join(missing)} from Debian"):
        runner.run(["apt-get", "update", "-qq"], env={"DEBIAN_FRONTEND": "noninteractive"})
        runner.run(["apt-get", "install", "-y", "-qq", *missing], env={"DEBIAN_FRONTEND": "noninteractive"})


# Every kind node runs its own kubelet and containerd, each holding inotify instances; the host default (128)
# runs out at about two clusters, and then kubelet dies with "too many open files" (kind's known issue).
HOST_SYSCTLS = {"fs/inotify/max_user_instances": 8192, "fs/inotify/max_user_watches": 524288}


def ensure_host_limits(progress: Progress) -> None:
    for key, wanted in HOST_SYSCTLS.items():
        path = Path("/proc/sys") / key
        try:
            if int(path.read_text()) < wanted:
                path.write_text(str(wanted))
                progress.info(f"raised {key.replace('/', '.')} to {wanted}")
        except OSError as exc:
            progress.info(
                f"[yellow]warning[/yellow]: cannot raise {key.replace('/', '.')} to {wanted} ({exc}); "
                "several clusters at once may fail"
            )


def ensure_host_tools(runner: Runner, progress: Progress) -> None:
    if shutil.which("go") is None:
        raise MissingDependency("chaoskit builds Kubernetes from Go modules and needs `go` (>= 1.24) on PATH")
    _install_packages(runner, HOST_PACKAGES, progress)


def ensure_engine(runner: Runner, cache: Cache, progress: Progress) -> None:
    """Make `docker` answer, starting containerd and dockerd ourselves when needed."""
    needs_filter = not bounding_set_is_full()
    if engine_running(runner):
        if needs_filter and default_runtime(runner) != RUNTIME_NAME:
            progress.info(
                "[yellow]warning[/yellow]: the running Docker engine uses runtime "
                f"{default_runtime(runner)!r}; privileged kind nodes may fail on this host "
                f"(capability bounding set incomplete). Stop dockerd and let chaoskit start it."
            )
        return
    if not _is_root():
        raise MissingDependency(
            "no Docker engine answers and chaoskit is not root: start Docker yourself "
            "(dockerd, with a runtime that tolerates this host's capability bounding set) or run as root"
        )
    _install_packages(runner, DEBIAN_PACKAGES, progress)
    if needs_filter:
        with progress.step("installing the runc-capfilter runtime"):
            bin_dir = gobuild.build(gobuild.TARGETS["runc-capfilter"], cache, runner, go=gobuild.go_version(runner))
            RUNTIME_PATH.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(bin_dir / "runc-capfilter", RUNTIME_PATH)
            existing = json.loads(DAEMON_JSON.read_text()) if DAEMON_JSON.exists() else {}
            DAEMON_JSON.parent.mkdir(parents=True, exist_ok=True)
            DAEMON_JSON.write_text(json.dumps(merged_daemon_config(existing), indent=2) + "\n")
    with progress.step("starting containerd and dockerd"):
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        sock = Path("/run/containerd/containerd.sock")
        ctr_version = ["ctr", "--timeout", "3s", "version"]
        if not _answers(runner, ctr_version):
            spawn(["containerd"], LOG_DIR / "containerd.log", detach=True)  # the daemons outlive chaoskit
            _wait(lambda: sock.exists() and _answers(runner, ctr_version), 30, "containerd")
        spawn(["dockerd", f"--containerd={sock}"], LOG_DIR / "dockerd.log", detach=True)
        _wait(lambda: engine_running(runner), 60, "dockerd")


def _answers(runner: Runner, argv: list[str]) -> bool:
    try:
        return runner.run(argv, timeout=10, check=False).returncode == 0
    except CommandError:  # not installed, or timed out
        return False  # a stale socket left by a killed daemon makes clients wait rather than fail


def _wait(ready: Callable[[], bool], timeout: float, what: str) -> None:
    if poll(ready, timeout, 0.5, tolerate=()).done:
        return
    raise MissingDependency(f"{what} did not come up within {seconds(timeout)}; see {LOG_DIR / (what + '.log')}")
