"""The build cache: one directory per artefact, keyed by everything that shapes it.

Entries appear atomically (built under a temporary name, renamed when complete),
so an interrupted build never leaves a half-written entry behind.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

# Bump when the layout of cache entries changes.
LAYOUT = "1"


def default_root() -> Path:
    if env := os.environ.get("CHAOSKIT_CACHE"):
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "chaoskit"


def cache_key(*parts: str | bytes) -> str:
    """A short stable digest of the parts, in order; each part is length-prefixed so joins cannot collide."""
    h = hashlib.sha256(LAYOUT.encode())
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()[:16]


def tree_digest(root: Path, names: Iterable[str] | None = None) -> str:
    """Digest of the files under root (relative path + mode + content), for keying on source trees."""
    parts: list[str | bytes] = []
    paths = sorted(p for p in root.rglob("*") if p.is_file()) if names is None else [root / n for n in sorted(names)]
    for path in paths:
        parts += [str(path.relative_to(root)), oct(path.stat().st_mode & 0o777), path.read_bytes()]
    return cache_key(*parts)


@dataclass(frozen=True)
class Cache:
    root: Path

    def path(self, kind: str, name: str, key: str) -> Path:
        return self.root / kind / f"{name}-{key}"

    def get(self, kind: str, name: str, key: str) -> Path | None:
        p = self.path(kind, name, key)
        return p if p.exists() else None

    @contextmanager
    def entry(self, kind: str, name: str, key: str) -> Iterator[Path]:
        """Yield a fresh directory to fill; it becomes the entry only if the block completes."""
        final = self.path(kind, name, key)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.parent / f".tmp-{name}-{key}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        tmp.mkdir()
        try:
            yield tmp
            try:
                os.rename(tmp, final)
            except OSError:
                if not final.exists():
                    raise
                shutil.rmtree(tmp)  # another build won the race; keep theirs
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def sweep_temporaries(self) -> int:
        """Remove leftovers of builds that were killed outright (SIGKILL skips the cleanup above)."""
        n = 0
        for tmp in self.root.glob("*/.tmp-*"):
            pid = tmp.name.rsplit("-", 2)[-2]
            if not pid.isdigit() or not alive(int(pid)):
                shutil.rmtree(tmp, ignore_errors=True)
                n += 1
        return n


def alive(pid: int) -> bool:
    """Whether process `pid` still runs on this host (one owned by another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
