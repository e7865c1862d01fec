"""chaoskit.cluster.build: which lane builds what, and chaoskit's own image prepared beside the Go builds."""

from __future__ import annotations

import io
import threading
from pathlib import Path
from typing import Any

import pytest

from chaoskit.cluster import build, debian, gobuild, images, nodeimage, selfimage
from chaoskit.cluster.cache import Cache
from chaoskit.errors import CommandError
from chaoskit.progress import Progress
from chaoskit.seams.shell import FakeRunner


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[str, str]]:
    """Every build of the lanes, as (what, thread name), with the tools faked at their seams."""
    done: list[tuple[str, str]] = []

    def record(what: str) -> Path:
        done.append((what, threading.current_thread().name))
        return tmp_path / what

    monkeypatch.setattr(gobuild, "go_version", lambda runner: "go1.24.1")
    monkeypatch.setattr(gobuild, "build", lambda target, cache, runner, go: record(f"go {target.name}"))
    monkeypatch.setattr(debian, "build", lambda fs, cache, runner: record(f"rootfs {fs.name}"))
    monkeypatch.setattr(selfimage, "build", lambda cache, runner: record("chaoskit image"))
    monkeypatch.setattr(images, "build", lambda recipe, bins, bases, cache: tmp_path / "image.tar")
    monkeypatch.setattr(nodeimage, "image_exists", lambda runner, tag: False)
    monkeypatch.setattr(nodeimage, "build", lambda inputs, runner, work, repo: record("node image"))
    return done


def _build_all(tmp_path: Path, *, offline: bool) -> str:
    out = io.StringIO()
    build.build_all(Cache(tmp_path / "cache"), FakeRunner(), Progress(out), offline_node_image=offline)
    return out.getvalue()


def test_kubernetes_builds_in_its_own_lane_and_every_other_binary_beside_it(
    built: list[tuple[str, str]], tmp_path: Path
) -> None:
    _build_all(tmp_path, offline=True)
    lanes = {what: thread for what, thread in built}
    main = threading.current_thread().name
    assert lanes["go kubernetes"] == main
    others = [n for n in (*build.HOST_TARGETS, *build.NODE_TARGETS) if n != "kubernetes"]
    assert {lanes[f"go {n}"] for n in others} == {lanes["go etcd"]} != {main}
    assert [w for w, _ in built][-1] == "node image"


def test_the_rootfs_lane_prepares_chaoskits_own_image_after_the_nodes_rootfs(
    built: list[tuple[str, str]], tmp_path: Path
) -> None:
    _build_all(tmp_path, offline=True)
    lane = [what for what, _ in built if what.startswith(("rootfs", "chaoskit"))]
    assert lane == ["rootfs node", "rootfs proxy-base", "chaoskit image"]
    assert len({thread for what, thread in built if what in lane}) == 1


def test_with_a_stock_node_image_only_the_host_binaries_build(built: list[tuple[str, str]], tmp_path: Path) -> None:
    _build_all(tmp_path, offline=False)
    assert sorted(what for what, _ in built) == ["go kind", "go workload"]


def test_a_self_image_that_fails_is_said_and_leaves_the_cluster_build_going(
    built: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def fails(cache: Any, runner: Any) -> Path:
        raise CommandError(["pip", "install"], 1, "no route to PyPI")

    monkeypatch.setattr(selfimage, "build", fails)
    said = _build_all(tmp_path, offline=True)
    assert "chaoskit's own image is left to chaoskit install" in said and "no route to PyPI" in said
    assert [w for w, _ in built][-1] == "node image"


def test_no_cluster_build_makes_kwok_and_its_image_builds_only_when_asked(
    built: list[tuple[str, str]], tmp_path: Path
) -> None:
    _build_all(tmp_path, offline=True)
    assert "go kwok" not in [w for w, _ in built]
    archive = build.build_kwok_image(Cache(tmp_path / "cache"), FakeRunner(), Progress(io.StringIO()))
    assert [w for w, _ in built][-1] == "go kwok" and archive == tmp_path / "image.tar"
