"""Our own Go programs (images/*) pass go vet and their Go unit tests."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from chaoskit.cluster.assets import images_dir

OURS = ("runc-capfilter", "workload", "netd", "pause")  # images/etcd is only etcdmain.Main


@pytest.mark.parametrize("module", OURS)
def test_go_module_vets_and_tests_clean(module: str) -> None:
    if shutil.which("go") is None:
        pytest.fail("go is required to build chaoskit's cluster")
    cwd = images_dir() / module
    for argv in (["go", "vet", "./..."], ["go", "test", "./..."]):
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{' '.join(argv)} in images/{module}:\n{done.stdout}{done.stderr}"
