"""`chaoskit diagnose --watch [SECONDS]`: a look at the cluster every few seconds, printing only what changed.

The interval runs from the end of one diagnosis to the start of the next, so a slow diagnosis (a frozen API server
costs the whole budget) never stacks looks on a cluster already in trouble. Text is one line per change, each with
the wall-clock time its look began; `-o json` is the same changes as JSON Lines, one object per change.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar

import click

from chaoskit import figures
from chaoskit.diagnosers.changes import Change, CollectionChanged, FindingChanged, StatusChanged, changes
from chaoskit.diagnosers.kit.base import Diagnosis
from chaoskit.errors import UsageError

INTERVAL = 5.0  # seconds between looks: a healthy diagnosis takes about 2, so a look every ~7 s
FORMATS = ("table", "json")  # what a stream of changes can be printed as
WHY = 120  # characters of why evidence was not collected on a text line (JSON keeps it whole)

F = TypeVar("F", bound=Callable[..., Any])
Look = Callable[[], Diagnosis]
Write = Callable[[str], None]


class Seconds(click.ParamType[float, Any]):
    """--watch's optional interval; a word there is most likely a component named after the flag."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds (components go before it: diagnose {value} --watch)")
        if seconds < 0:
            self.fail(f"{value!r}: the interval cannot be negative")
        return seconds


def watch_option(f: F) -> F:
    # an optional value, not --watch plus --interval: the common case stays two words, `--watch 2` reads as `watch -n 2`
    return click.option(
        "--watch",
        "watch_s",
        type=Seconds(),
        is_flag=False,
        flag_value=INTERVAL,
        metavar="[SECONDS]",
        help=f"Diagnose again every SECONDS (default {INTERVAL:g}, counted from the end of one diagnosis) until "
        "Ctrl-C, printing only what changed: status, findings appeared (+) or cleared (-), evidence uncollected. "
        "Table or json (JSON Lines) only.",
    )(f)


def count_option(f: F) -> F:
    return click.option(
        "--count",
        type=click.IntRange(min=1),
        help="With --watch: stop after N looks (the exit code is the last one's).",
    )(f)


def watch_diagnoses(
    look: Look, interval: float | None, count: int | None, fmt: str, given: Mapping[str, object]
) -> int:
    """The command: refuse what a stream of changes cannot carry, then watch until Ctrl-C or `count` looks."""
    seconds = refuse(interval, count, fmt, given)
    tty = sys.stdout.isatty()
    printer: Printer = JsonLines(_echo) if fmt == "json" else Lines(_echo, tty=tty)
    how_long = f"{count} look(s)" if count else "Ctrl-C"
    click.echo(
        f"watching: a look every {figures.seconds(seconds)} after the last one ended, until {how_long}", err=True
    )
    return watch(look, interval=seconds, count=count, printer=printer)


def refuse(interval: float | None, count: int | None, fmt: str, given: Mapping[str, object]) -> float:
    """The interval, or a usage error: --count alone, or what writes one diagnosis (a report format, a file, a run
    record) beside --watch."""
    if interval is None:
        raise UsageError("--count counts --watch's looks: add --watch")
    if fmt not in FORMATS:
        raise UsageError(
            f"-o {fmt} is one report, not a stream: --watch prints -o table (lines) or -o json (JSON Lines)"
        )
    flags = [flag for flag, value in given.items() if value is not None]
    if flags:
        raise UsageError(f"{', '.join(flags)} write(s) one diagnosis and cannot go with --watch: run them without it")
    return interval


def watch(
    look: Look, *, interval: float, count: int | None, printer: Printer, sleep: Callable[[float], None] = time.sleep
) -> int:
    """Look, print what changed, sleep `interval`, again; until Ctrl-C or `count` looks. The exit code is the last
    complete look's: 0 ok, 1 degraded or failed. Ctrl-C before any look finished is passed on (exit 130)."""
    previous: Diagnosis | None = None
    looks = 0
    try:
        while count is None or looks < count:
            if looks:
                sleep(interval)
            current = look()
            looks += 1
            printer.show(looks, previous, current, changes(previous, current))
            previous = current
    except KeyboardInterrupt:
        if previous is None:
            raise
    finally:
        printer.close()
    assert previous is not None  # count >= 1, so a look ran or KeyboardInterrupt was passed on
    return previous.exit_code


class Printer(Protocol):
    def show(self, look: int, previous: Diagnosis | None, current: Diagnosis, found: Sequence[Change]) -> None: ...

    def close(self) -> None: ...


def _echo(text: str) -> None:
    click.echo(text, nl=False)


def stamp(t: float) -> str:
    """Wall-clock time of day, local: what a person beside the terminal compares with their other windows."""
    return datetime.fromtimestamp(t).strftime("%H:%M:%S")


class JsonLines:
    """One JSON object per change, each with its look's number, time and the cluster's status then (jq-ready)."""

    def __init__(self, write: Write) -> None:
        self._write = write

    def show(self, look: int, previous: Diagnosis | None, current: Diagnosis, found: Sequence[Change]) -> None:
        head = {"look": look, "at": current.collected_at, "time": stamp(current.collected_at), "status": current.status}
        for c in found:
            self._write(json.dumps({**head, **c.to_dict()}) + "\n")

    def close(self) -> None:
        pass


_COLORS = {"ok": "green", "degraded": "yellow", "failed": "red", "critical": "red", "warning": "yellow"}
_ERASE = "\r\x1b[K"  # back to the line's start and clear it: the tty heartbeat is overwritten, never scrolled


class Lines:
    """The first look as a summary (a row per component and node, then the findings); later looks one line per
    change, time-stamped; on a tty, a look without change rewrites a single heartbeat line."""

    def __init__(self, write: Write, *, tty: bool = False) -> None:
        self._write = write
        self._tty = tty
        self._heartbeat = False

    def show(self, look: int, previous: Diagnosis | None, current: Diagnosis, found: Sequence[Change]) -> None:
        at = stamp(current.collected_at)
        per_node = _per_node(current, previous)
        if previous is None:
            self._line(f"{at} {current.cluster}: {self._word(current.status)} ({figures.seconds(current.duration_s)})")
            width = max((len(r.component) for r in current.reports), default=0)
            node_width = max((len(r.subject) for r in current.reports), default=0)
            for r in current.reports:
                self._line(f"  {r.component:<{width}}  {r.subject:<{node_width}}  {self._word(r.status)}")
            for text in self._changes([c for c in found if not isinstance(c, StatusChanged)], per_node):
                self._line(f"  {text}")
        elif found:
            for text in self._changes(found, per_node):
                self._line(f"{at} {text}")
        elif self._tty:
            self._write(f"{_ERASE}{at} no change · {self._word(current.status)}")
            self._heartbeat = True

    def close(self) -> None:
        if self._heartbeat:
            self._write("\n")

    def _line(self, text: str) -> None:
        self._write((_ERASE if self._heartbeat else "") + text + "\n")
        self._heartbeat = False

    def _word(self, word: str | None) -> str:
        text = word or "absent"
        return click.style(text, fg=_COLORS.get(text)) if self._tty and text in _COLORS else text

    def _changes(self, found: Sequence[Change], per_node: frozenset[str]) -> list[str]:
        # the checks of one component on one node that went (or came back) together make one line
        lines: list[str] = []
        gone: list[CollectionChanged] = []
        for c in [*found, None]:
            if gone and not (isinstance(c, CollectionChanged) and _together(gone[0], c)):
                lines.append(_collection(gone))
                gone = []
            if isinstance(c, CollectionChanged):
                gone.append(c)
            elif isinstance(c, StatusChanged):
                lines.append(f"{c.component} on {c.node}: {self._word(c.before)} → {self._word(c.after)}")
            elif isinstance(c, FindingChanged):
                lines.append(self._finding(c, per_node))
        return lines

    def _finding(self, c: FindingChanged, per_node: frozenset[str]) -> str:
        f = c.finding
        sign = {"appeared": "+", "cleared": "-", "severity": "~"}[c.how]
        where = f"{c.component} on {c.node}" if c.component in per_node and c.node not in f.title else c.component
        was = f" (was {self._word(c.was)})" if c.was else ""
        return f"{sign} {self._word(f.severity)} {where}: {f.title}{was}"


def _together(a: CollectionChanged, b: CollectionChanged) -> bool:
    return (a.component, a.node, a.collected) == (b.component, b.node, b.collected)


def _collection(same: Sequence[CollectionChanged]) -> str:
    first = same[0]
    checks = ", ".join(dict.fromkeys(check for c in same for check in c.checks)) or "evidence"
    if first.collected:
        return f"{first.component} on {first.node}: {checks} collected again"
    why = first.why if len(first.why) <= WHY else first.why[: WHY - 1] + "…"
    return f"{first.component} on {first.node}: {checks} not collected ({why})"


def _per_node(*looks: Diagnosis | None) -> frozenset[str]:
    """Components reported on more than one node: their findings need the node named, the others' do not."""
    seen: dict[str, set[str]] = {}
    for d in looks:
        for r in d.reports if d else ():
            seen.setdefault(r.component, set()).add(r.subject)
    return frozenset(c for c, nodes in seen.items() if len(nodes) > 1)
