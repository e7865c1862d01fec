"""chaoskit.cluster.docker: the daemon.json merge and the engine probe."""

from __future__ import annotations

import copy

from chaoskit.cluster.docker import RUNTIME_NAME, RUNTIME_PATH, engine_running, merged_daemon_config
from chaoskit.seams.shell import FakeRunner


def test_merged_daemon_config_sets_our_runtime_as_default() -> None:
    merged = merged_daemon_config({})
    assert merged == {"runtimes": {RUNTIME_NAME: {"path": str(RUNTIME_PATH)}}, "default-runtime": RUNTIME_NAME}


def test_merged_daemon_config_keeps_other_keys_and_runtimes() -> None:
    existing = {
        "log-driver": "json-file",
        "registry-mirrors": ["https://mirror.example"],
        "runtimes": {"nvidia": {"path": "/usr/bin/nvidia-container-runtime"}},
        "default-runtime": "nvidia",
    }
    before = copy.deepcopy(existing)

    merged = merged_daemon_config(existing)

    assert merged["log-driver"] == "json-file"
    assert merged["registry-mirrors"] == ["https://mirror.example"]
    assert merged["runtimes"] == {
        "nvidia": {"path": "/usr/bin/nvidia-container-runtime"},
        RUNTIME_NAME: {"path": str(RUNTIME_PATH)},
    }
    assert merged["default-runtime"] == RUNTIME_NAME
    assert existing == before  # the host's config object is not modified


def test_merged_daemon_config_tolerates_null_runtimes() -> None:
    assert merged_daemon_config({"runtimes": None})["runtimes"] == {RUNTIME_NAME: {"path": str(RUNTIME_PATH)}}


def test_merged_daemon_config_is_idempotent() -> None:
    once = merged_daemon_config({"debug": True})
    assert merged_daemon_config(once) == once


def test_engine_running_is_false_when_docker_info_fails() -> None:
    runner = FakeRunner(failures={("docker", "info"): "Cannot connect to the Docker daemon"})
    assert engine_running(runner) is False


def test_engine_running_is_true_when_docker_info_answers() -> None:
    runner = FakeRunner(responses={("docker", "info"): "20.10.24\n"})
    assert engine_running(runner) is True
    assert runner.calls == [("docker", "info", "--format", "{{.ServerVersion}}")]
