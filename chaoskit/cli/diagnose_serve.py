"""`chaoskit diagnose --serve [ADDR]`: the diagnosis as a Prometheus target, looked at again every --interval seconds.

A look runs in the foreground and the scrape reads the last finished one, so looks never overlap (the next starts
--interval seconds after one ends) and a scrape never waits on a slow diagnosis.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import click

from chaoskit import figures
from chaoskit.diagnosers.kit.base import Diagnosis
from chaoskit.engine import sigterm_as_interrupt
from chaoskit.errors import UsageError
from chaoskit.exporters.diagnosis import PORT, Latest, keep_looking, serve

INTERVAL = 30.0  # seconds between looks: a scrape interval's worth, and light on a cluster already in trouble
ADDRESS = f":{PORT}"

F = TypeVar("F", bound=Callable[..., Any])
Look = Callable[[], Diagnosis]
Say = Callable[[str], None]


def serve_options(f: F) -> F:
    # an optional value like --watch's: `--serve` alone takes the port beside `chaoskit metrics serve`'s
    f = click.option(
        "--interval",
        "interval_s",
        type=click.FloatRange(min=1),
        help=f"With --serve: seconds from the end of one look to the start of the next (default {INTERVAL:g}).",
    )(f)
    return click.option(
        "--serve",
        "serve_addr",
        is_flag=False,
        flag_value=ADDRESS,
        metavar="[ADDR]",
        help=f"Serve the diagnosis as Prometheus series on [HOST]:PORT (default {ADDRESS}) until Ctrl-C: "
        "chaoskit_component_status, chaoskit_finding, chaoskit_diagnosis_duration_seconds, "
        "chaoskit_diagnosis_last_look_timestamp_seconds, chaoskit_diagnosis_interval_seconds.",
    )(f)


def host_port(addr: str) -> tuple[str, int]:
    """[HOST]:PORT or PORT; no host listens on every address."""
    host, _, port = addr.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--serve {addr!r}: give [HOST]:PORT, e.g. :{PORT} or 127.0.0.1:{PORT}")
    return host.strip("[]") or "0.0.0.0", int(port)


def refuse(addr: str | None, interval: float | None, given: Mapping[str, object]) -> tuple[str, int] | None:
    """Where to listen (None without --serve), or a usage error for what cannot go with it."""
    if addr is None:
        if interval is not None:
            raise UsageError("--interval is --serve's: add --serve")
        return None
    flags = [flag for flag, value in given.items() if value is not None]
    if flags:
        raise UsageError(f"{', '.join(flags)} cannot go with --serve: the series are its only output")
    return host_port(addr)


def serve_diagnoses(look: Look, where: tuple[str, int], interval: float | None, say: Say) -> None:
    """Listen, then look until Ctrl-C or SIGTERM."""
    host, port = where
    seconds = INTERVAL if interval is None else interval
    latest = Latest(seconds)
    try:
        server, _ = serve(latest, port, host)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc}") from exc
    say(
        f"serving http://{host}:{port}/metrics: a look every {figures.seconds(seconds)} after the last one ended, "
        "until Ctrl-C"
    )
    try:
        with sigterm_as_interrupt():
            keep_looking(look, latest.set, seconds, threading.Event(), say)
    except KeyboardInterrupt:
        say("stopped")
    finally:
        server.shutdown()
