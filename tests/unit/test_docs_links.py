"""Every relative link of the README, ARCHITECTURE.md, docs/ and bench/results/ leads to a file in the repository, and
an anchor to a heading of that file (spelled as GitHub spells a heading's anchor)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [
        ROOT / "README.md",
        ROOT / "ARCHITECTURE.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "bench" / "results").glob("*.md"),
    ]
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The page without its fenced blocks and code spans, where a bracket is no link."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens."""
    words = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower())
    return words.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {anchor(m.group(1)) for m in re.finditer(r"^#+ (.+)$", _prose(page.read_text(encoding="utf-8")), re.M)}


def test_the_pages_are_there() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"README.md", "ARCHITECTURE.md", "docs/faults.md", "docs/playbooks.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z]+:", target):  # https:, mailto: - not the repository's
            continue
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists() or ROOT not in (resolved, *resolved.parents):
            broken.append(f"{target}: no such file in the repository")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{target}: no heading #{fragment} in {resolved.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_an_anchor_is_spelled_as_github_spells_it() -> None:
    assert anchor("kube-proxy's rule-sync delay at your cluster's size") == (
        "kube-proxys-rule-sync-delay-at-your-clusters-size"
    )
    assert anchor("A suite: several playbooks as one gate") == "a-suite-several-playbooks-as-one-gate"
