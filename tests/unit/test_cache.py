"""chaoskit.cluster.cache: keys, tree digests, atomic entries and the sweep of killed builds."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from chaoskit.cluster.cache import LAYOUT, Cache, cache_key, tree_digest


def _dead_pid() -> int:
    """A pid no process has right now (searched from the top of the pid range)."""
    try:
        pid = int(Path("/proc/sys/kernel/pid_max").read_text()) - 1
    except OSError:
        pid = 2**22 - 1
    while pid > 300:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid -= 1
    pytest.skip("no free pid found")


def _leftovers(cache: Cache) -> list[Path]:
    return sorted(cache.root.glob("*/.tmp-*"))


# --- cache_key ---------------------------------------------------------------------------------


def test_cache_key_is_stable_and_follows_the_documented_recipe() -> None:
    expected = hashlib.sha256(LAYOUT.encode())
    for part in (b"go1.24.1", b"kind"):
        expected.update(len(part).to_bytes(8, "big"))
        expected.update(part)

    assert cache_key("go1.24.1", "kind") == cache_key("go1.24.1", "kind")
    assert cache_key("go1.24.1", "kind") == expected.hexdigest()[:16]


def test_cache_key_treats_str_and_its_utf8_bytes_alike() -> None:
    assert cache_key("é", "x") == cache_key("é".encode(), b"x")


@pytest.mark.parametrize(
    ("left", "right"),
    [
        (("ab", "c"), ("a", "bc")),
        (("abc",), ("a", "bc")),
        (("a", ""), ("a",)),
        (("", "a"), ("a",)),
        (("a", "b"), ("b", "a")),
    ],
)
def test_cache_key_separates_parts_that_would_concatenate_alike(left: tuple[str, ...], right: tuple[str, ...]) -> None:
    assert cache_key(*left) != cache_key(*right)


def test_cache_key_is_sixteen_hex_digits() -> None:
    key = cache_key("anything")
    assert len(key) == 16
    int(key, 16)


# --- tree_digest -------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    (root / "pkg").mkdir(parents=True)
    (root / "go.mod").write_text("module example.dev/x\n")
    (root / "pkg" / "main.go").write_text("package main\n")
    (root / "pkg" / "main.go").chmod(0o644)
    return root


def test_tree_digest_is_stable_for_an_unchanged_tree(tree: Path) -> None:
    assert tree_digest(tree) == tree_digest(tree)


def test_tree_digest_changes_with_file_content(tree: Path) -> None:
    before = tree_digest(tree)
    (tree / "pkg" / "main.go").write_text("package main // edited\n")
    assert tree_digest(tree) != before


def test_tree_digest_changes_with_file_mode(tree: Path) -> None:
    before = tree_digest(tree)
    (tree / "pkg" / "main.go").chmod(0o755)
    assert tree_digest(tree) != before


def test_tree_digest_changes_when_a_file_moves(tree: Path) -> None:
    before = tree_digest(tree)
    (tree / "pkg" / "main.go").rename(tree / "pkg" / "other.go")
    assert tree_digest(tree) != before


def test_tree_digest_ignores_mtime_and_empty_directories(tree: Path) -> None:
    before = tree_digest(tree)
    os.utime(tree / "go.mod", (1, 1))
    (tree / "empty").mkdir()
    assert tree_digest(tree) == before


def test_tree_digest_with_names_only_reads_those_files(tree: Path) -> None:
    only_mod = tree_digest(tree, ["go.mod"])
    (tree / "pkg" / "main.go").write_text("changed\n")
    assert tree_digest(tree, ["go.mod"]) == only_mod
    assert only_mod != tree_digest(tree)


# --- Cache.entry -------------------------------------------------------------------------------


def test_cache_entry_appears_only_when_the_block_completes(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    with cache.entry("bin", "kind", "k1") as out:
        assert cache.get("bin", "kind", "k1") is None
        assert out.parent == cache.root / "bin"
        assert out.name.startswith(".tmp-kind-k1-")
        (out / "kind").write_text("binary")

    entry = cache.get("bin", "kind", "k1")
    assert entry == cache.path("bin", "kind", "k1") == tmp_path / "cache" / "bin" / "kind-k1"
    assert (entry / "kind").read_text() == "binary"
    assert not out.exists()
    assert _leftovers(cache) == []


def test_cache_entry_is_not_left_behind_when_build_fails(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    with pytest.raises(RuntimeError, match="compiler crashed"), cache.entry("bin", "etcd", "k1") as out:
        (out / "half-written").write_text("x")
        raise RuntimeError("compiler crashed")

    assert cache.get("bin", "etcd", "k1") is None
    assert not out.exists()
    assert _leftovers(cache) == []


def test_cache_entry_is_not_left_behind_when_interrupted(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    with pytest.raises(KeyboardInterrupt), cache.entry("bin", "etcd", "k1"):
        raise KeyboardInterrupt

    assert cache.get("bin", "etcd", "k1") is None
    assert _leftovers(cache) == []


def test_cache_entry_keeps_the_entry_of_a_build_that_finished_first(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    with cache.entry("bin", "kind", "k1") as out:
        (out / "kind").write_text("ours")
        theirs = cache.path("bin", "kind", "k1")
        theirs.mkdir()
        (theirs / "kind").write_text("theirs")

    assert (cache.path("bin", "kind", "k1") / "kind").read_text() == "theirs"
    assert _leftovers(cache) == []


# --- Cache.sweep_temporaries -------------------------------------------------------------------


def test_sweep_temporaries_removes_only_temp_dirs_of_dead_processes(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    dead = tmp_path / "bin" / f".tmp-kind-0123456789abcdef-{_dead_pid()}-a1b2c3"
    alive = tmp_path / "images" / f".tmp-pause-3.10.1-0123456789abcdef-{os.getpid()}-d4e5f6"
    finished = tmp_path / "bin" / "kind-0123456789abcdef"
    for d in (dead, alive, finished):
        d.mkdir(parents=True)
        (d / "file").write_text("x")

    assert cache.sweep_temporaries() == 1

    assert not dead.exists()
    assert alive.exists()
    assert finished.exists()


def test_sweep_temporaries_spares_a_build_in_progress(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    with cache.entry("rootfs", "node", "k1") as out:
        assert cache.sweep_temporaries() == 0
        assert out.exists()
    assert cache.get("rootfs", "node", "k1") is not None


def test_sweep_temporaries_on_an_empty_cache_does_nothing(tmp_path: Path) -> None:
    assert Cache(tmp_path / "never-created").sweep_temporaries() == 0
