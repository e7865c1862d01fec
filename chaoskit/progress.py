"""Progress on stderr: one line per step with elapsed time, so data on stdout stays clean."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console

from chaoskit.figures import seconds


class Progress:
    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        self._console = Console(file=stream or sys.stderr, highlight=False, soft_wrap=True)
        self._quiet = quiet
        self._t0 = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    def info(self, message: str) -> None:
        if not self._quiet:
            self._console.print(f"[dim]{self.elapsed():7.1f}s[/dim] {message}", markup=True)

    @contextmanager
    def step(self, title: str) -> Iterator[None]:
        """Announce a step, then report how long it took or that it failed."""
        self.info(f"[bold]→[/bold] {title} …")
        start = time.monotonic()
        try:
            yield
        except BaseException:
            self.info(f"[red]✗[/red] {title} failed after {seconds(time.monotonic() - start)}")
            raise
        self.info(f"[green]✓[/green] {title} ({seconds(time.monotonic() - start)})")


def silent() -> Progress:
    return Progress(quiet=True)
