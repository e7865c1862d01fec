"""Paths into a playbook document, spelled as users read them: spec.steps[0].duration."""

from __future__ import annotations

Path = tuple[str | int, ...]


def dotted(path: Path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text
