"""Our own Go programs (images/*) pass go vet and their Go unit tests."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from chaoskit.cluster.assets import images_dir
from chaoskit.cluster.gobuild import COMPILE_ENV, COMPILE_FLAGS

OURS = ("runc-capfilter", "workload", "netd", "pause")  # images/etcd and images/coredns only call upstream's main


@pytest.mark.parametrize("module", OURS)
def test_go_module_vets_and_tests_clean(module: str) -> None:
    if shutil.which("go") is None:
        pytest.fail("go is required to build chaoskit's cluster")
    cwd = images_dir() / module
    # the cluster build's flags, so its compiled packages come from Go's build cache: a fresh host's first vet and
    # test took 37.5 s for the workload alone, 8.6 s after the build with the same flags
    env = {**os.environ, **COMPILE_ENV}
    for argv in (["go", "vet", *COMPILE_FLAGS, "./..."], ["go", "test", *COMPILE_FLAGS, "./..."]):
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{' '.join(argv)} in images/{module}:\n{done.stdout}{done.stderr}"
