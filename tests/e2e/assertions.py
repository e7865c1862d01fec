"""Which assertion each e2e test makes, and what a change did to them: so a change that moves, merges or speeds up
tests can show that nothing proven before stops being proven.

    python -m tests.e2e.assertions [REV]     # the tests and assertions REV had that HEAD's working tree has not, and
                                             # the new ones (default REV: HEAD)

An assertion is an `assert` statement or a `pytest.fail(...)` call in a test function or in a module-level helper,
compared by its source text with whitespace squeezed; helpers are listed under their own names. A change to what
an assertion's names hold (the code computing them) does not show here: read those with the diff.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

E2E = Path("tests/e2e")


def _squeezed(node: ast.AST, source: str) -> str:
    return re.sub(r"\s+", " ", ast.get_source_segment(source, node) or "").strip()


def assertions(source: str, module: str) -> dict[str, set[str]]:
    """Function name (module::name) → the assertions in its body."""
    out: dict[str, set[str]] = {}
    for fn in ast.parse(source).body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        found = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Assert):
                found.add(_squeezed(node, source))
            elif isinstance(node, ast.Call) and ast.unparse(node.func) == "pytest.fail":
                found.add(_squeezed(node, source))
        if found:
            out[f"{module}::{fn.name}"] = found
    return out


def at(rev: str | None) -> dict[str, set[str]]:
    """Every e2e module's assertions, in the working tree (None) or at git revision `rev`."""
    out: dict[str, set[str]] = {}
    if rev is None:
        files = {p.name: p.read_text() for p in sorted(E2E.glob("*.py"))}
    else:
        names = subprocess.run(
            ["git", "ls-tree", "--name-only", rev, f"{E2E}/"], capture_output=True, text=True, check=True
        ).stdout.split()
        files = {
            Path(n).name: subprocess.run(
                ["git", "show", f"{rev}:{n}"], capture_output=True, text=True, check=True
            ).stdout
            for n in names
            if n.endswith(".py")
        }
    for name, source in files.items():
        out.update(assertions(source, name))
    return out


def _show(rev: str, path: str) -> str:
    return subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=True).stdout


def main() -> None:
    rev = sys.argv[1] if len(sys.argv) > 1 else "HEAD"
    before, after = at(rev), at(None)
    gone = {f: before[f] - after.get(f, set()) for f in before}
    added = {f: after[f] - before.get(f, set()) for f in after}
    for title, changes in ((f"only in {rev}", gone), ("only in the working tree", added)):
        rows = {f: a for f, a in changes.items() if a}
        print(f"{title}: {sum(len(a) for a in rows.values())} assertion(s) in {len(rows)} function(s)")
        for f, found in sorted(rows.items()):
            for a in sorted(found):
                print(f"  {f}: {a[:200]}")
    kept = sum(len(before[f] & after.get(f, set())) for f in before)
    print(f"kept: {kept} of {sum(len(a) for a in before.values())} assertions")


if __name__ == "__main__":
    main()
