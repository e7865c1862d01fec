"""The diagnosis as Prometheus series: each component's status, each standing finding, when and how often it looks.

`families` is pure (a Diagnosis in, metric families out); `Latest` holds the newest look for the scrape to read, so
a scrape never waits on a diagnosis and always sees one whole look.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from chaoskit.diagnosers.changes import shape
from chaoskit.diagnosers.kit.base import Diagnosis, Finding
from chaoskit.diagnosers.kit.managed import control_plane_of
from chaoskit.diagnosers.run import BUDGET, diagnose
from chaoskit.env import Env

__all__ = ["PORT", "SERIES", "Latest", "families", "finding_key", "keep_looking", "looker", "serve"]

PORT = 9465  # beside `chaoskit metrics serve`'s 9464, so one Prometheus scrapes both
STATUS = "chaoskit_component_status"
FINDING = "chaoskit_finding"
DURATION = "chaoskit_diagnosis_duration_seconds"
LAST_LOOK = "chaoskit_diagnosis_last_look_timestamp_seconds"
INTERVAL = "chaoskit_diagnosis_interval_seconds"
SERIES = (STATUS, FINDING, DURATION, LAST_LOOK, INTERVAL)
KEY_LENGTH = 64  # a label, not a sentence: long titles are cut where a dashboard column still shows them

_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_NOT_WORD = re.compile(r"[^a-z]+")


def finding_key(f: Finding) -> str:
    """A finding's stable name: its title's shape (what --watch calls the same finding) without numbers or quoted
    values, as a slug; the same across looks while the measured values in the title change."""
    text = _QUOTED.sub(" ", shape(f.title)).lower()
    return _NOT_WORD.sub("-", text).strip("-")[:KEY_LENGTH].rstrip("-") or "finding"


def families(d: Diagnosis, interval: float) -> list[Metric]:
    """One look's series: a status per component report, a 1 per standing (judged warning or critical) finding;
    `interval` is the wait between looks, so an alert can tell a diagnosis that stopped looking from a slow one."""
    status = GaugeMetricFamily(
        STATUS, "1 for a component's current status on its node (ok, degraded, failed, unknown).", labels=_STATUS_LABELS
    )
    for r in d.reports:
        status.add_metric([r.component, r.subject, r.status], 1)
    found = GaugeMetricFamily(FINDING, "1 while a judged warning or critical finding stands.", labels=_FINDING_LABELS)
    for labels in dict.fromkeys(_finding_labels(d)):  # two findings of one shape on one entity: one series
        found.add_metric(list(labels), 1)
    duration = GaugeMetricFamily(DURATION, "How long the last diagnosis took.", value=d.duration_s)
    last = GaugeMetricFamily(LAST_LOOK, "When the last diagnosis began (Unix time).", value=d.collected_at)
    every = GaugeMetricFamily(INTERVAL, "Seconds from the end of one diagnosis to the start of the next.", interval)
    return [status, found, duration, last, every]


_STATUS_LABELS = ["component", "node", "status"]
# caused_by: the root cause's entity, "" for a root cause, so an alert pages once per fault, not per consequence
_FINDING_LABELS = ["component", "node", "severity", "entity", "finding", "caused_by"]


def _finding_labels(d: Diagnosis) -> Iterable[tuple[str, str, str, str, str, str]]:
    for r in d.reports:
        for f in r.findings:
            if f.judged and f.severity in ("critical", "warning"):
                yield (f.component, r.subject, f.severity, f.entity, finding_key(f), f.caused_by)


class Latest:
    """A collector of the newest diagnosis: empty until the first look ends."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._last: Diagnosis | None = None

    def set(self, d: Diagnosis) -> None:
        with self._lock:
            self._last = d

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            last = self._last
        yield from families(last, self.interval) if last else ()


def serve(latest: Latest, port: int = PORT, address: str = "0.0.0.0") -> tuple[WSGIServer, threading.Thread]:
    """Answer /metrics for `latest` in a daemon thread; shut down with server.shutdown()."""
    registry = CollectorRegistry(auto_describe=False)  # describe would run a collect before the first look
    registry.register(latest)
    return start_http_server(port, address, registry=registry)


def keep_looking(
    look: Callable[[], Diagnosis],
    show: Callable[[Diagnosis], None],
    interval: float,
    stop: threading.Event,
    say: Callable[[str], None],
) -> None:
    """Look, show, wait `interval`; until `stop` is set. A look that fails keeps the last one served, so the series
    age and the not-looking alert fires rather than the target vanishing."""
    while True:
        try:
            show(look())
        except Exception as exc:  # a long-running target outlives one failed look
            say(f"look failed: {type(exc).__name__}: {exc}")
        if stop.wait(interval):
            return


def looker(env: Env, budget: float = BUDGET) -> Callable[[], Diagnosis]:
    """A look at every component of the cluster `env` reaches, its nodes listed anew each time (nodes come and go
    between looks that run for days)."""

    def look() -> Diagnosis:
        nodes = env.nodes.list_nodes()
        control_plane, out_of_reach = control_plane_of(env.kube, nodes)
        return diagnose(env, control_plane, [n.name for n in nodes], budget=budget, out_of_reach=out_of_reach)

    return look
