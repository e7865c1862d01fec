"""etcd diagnosis: the API server's only store, checked from its own side (health, leader, disk latency) and from
the API server's side (how long its etcd requests take).

etcd serves /health, /readyz and /metrics over plain HTTP on its metrics port (kind-config.yaml binds it), so no
client certificate is needed; latency is judged over the window between two scrapes, as for the API server.
"""

# Over 300 lines: one component's evidence and every judgement of it, read in one place (next: evidence apart).

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import Field

from chaoskit.components import apiserver, etcd
from chaoskit.diagnosers.kit.api_metrics import metrics_window
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Finding, register
from chaoskit.diagnosers.kit.common import HttpAnswer, failing_checks, http_command, metrics_of, rounded, uncollected
from chaoskit.diagnosers.kit.sources import Sources, window_wait
from chaoskit.diagnosers.kit.staticpod import ProcessState, assess_process, process_commands
from chaoskit.figures import seconds
from chaoskit.model.params import FaultParams
from chaoskit.seams.scrape import Metrics, scrape_command, windowed

ETCD_METRICS_URL = etcd.METRICS_BASE
ETCD_METRICS = (
    "etcd_disk_wal_fsync_duration_seconds",
    "etcd_disk_backend_commit_duration_seconds",
    "etcd_server_has_leader",
    "etcd_server_leader_changes_seen_total",
    "etcd_server_proposals_failed_total",
    "etcd_mvcc_db_total_size_in_bytes",
    "etcd_server_quota_backend_bytes",
)
# each side's second scrape only when its first answered: a frozen etcd (or API server) costs one timeout, not two
WINDOWS = (("etcd_before", "etcd_wait", "etcd_after"), ("api_before", "api_wait", "api_after"))


class EtcdParams(FaultParams):
    window: float = Field(default=1.0, ge=1, le=60, description="Seconds between the two metrics scrapes.")
    fsync_p99: float = Field(default=0.25, description="Seconds; WAL fsync p99 above this: warning (disk too slow).")
    commit_p99: float = Field(default=0.25, description="Seconds; backend commit p99 above this: warning.")
    request_p99: float = Field(default=1.0, description="Seconds; the API server's etcd request p99: warning.")
    min_slow: int = Field(default=3, description="Observations over their limit in the window before a p99 counts.")
    db_quota_share: float = Field(default=0.8, description="Database size over this share of its quota: warning.")


# What the host's CPU looked like: Linux's pressure stall information (the share of the last 10 s in which some task
# waited for a CPU) and the load average against the CPUs. A kind node shares the host's kernel, so this is the host.
HOST_CPU = "cat /proc/pressure/cpu 2>/dev/null; cat /proc/loadavg; nproc"
HOST = "host/cpu"  # the entity a saturated host CPU is named as: the kind nodes share it
CPU_BUSY = 25.0  # percent of the last 10 s some task waited for a CPU: etcd and the API server wait their turn too


@dataclass(frozen=True)
class HostCpu:
    pressure: float | None  # PSI cpu "some avg10", percent; None where the kernel has no PSI
    load1: float | None
    cpus: int | None

    @classmethod
    def parse(cls, text: str) -> HostCpu:
        pressure = re.search(r"^some avg10=([\d.]+)", text, re.M)
        load = re.search(r"^([\d.]+) [\d.]+ [\d.]+ \d+/\d+ \d+$", text, re.M)
        cpus = re.search(r"^(\d+)$", text, re.M)
        return cls(
            float(pressure.group(1)) if pressure else None,
            float(load.group(1)) if load else None,
            int(cpus.group(1)) if cpus else None,
        )

    @property
    def busy(self) -> bool:
        return self.pressure is not None and self.pressure >= CPU_BUSY

    def words(self) -> str:
        load = f"load {self.load1:g} on {self.cpus} CPUs" if self.load1 is not None and self.cpus else ""
        return f"some task waited for a CPU {self.pressure:.0f}% of the last 10 s" + (f", {load}" if load else "")


@dataclass(frozen=True)
class EtcdEvidence:
    node: str
    health: HttpAnswer  # /health on its metrics port: {"health":"true"}
    readyz: HttpAnswer
    metrics_before: Metrics
    metrics_after: Metrics
    api_before: Metrics  # the API server's etcd_request_duration_seconds
    api_after: Metrics
    window_s: float
    process: ProcessState
    cpu: HostCpu = HostCpu(None, None, None)


# what each alarm etcd raises means (its /health reason names it: "ALARM NOSPACE")
_ALARMS = {
    "NOSPACE": "the database reached --quota-backend-bytes: etcd refuses every write (every API create, update and "
    "lease renewal fails) until it is compacted, defragmented and the alarm disarmed",
    "CORRUPT": "a member's data disagrees with the others' (corruption check): etcd refuses writes",
}


def _size_of_quota(m: Metrics) -> str:
    size, quota = m.total("etcd_mvcc_db_total_size_in_bytes"), m.total("etcd_server_quota_backend_bytes")
    return f" (database {size / 2**20:.0f} MiB of a {quota / 2**20:.0f} MiB quota)" if size and quota else ""


@register
class EtcdDiagnoser(Diagnoser[EtcdEvidence, EtcdParams]):
    """etcd: process, /health and /readyz, leader, WAL fsync and commit latency, the API server's etcd latency."""

    component = "etcd"
    Params = EtcdParams

    def collect(self, src: Sources, node: str) -> EtcdEvidence:
        own = scrape_command(f"{ETCD_METRICS_URL}/metrics", ETCD_METRICS)
        api_before, api_wait, api_after = metrics_window(self.p.window)  # the API server diagnoser's: read once
        s = src.sections(
            node,
            {
                "health": http_command(f"{ETCD_METRICS_URL}/health"),
                "readyz": http_command(f"{ETCD_METRICS_URL}/readyz?verbose"),
                "etcd_before": own,
                "etcd_wait": window_wait(self.p.window),
                "etcd_after": own,
                "api_before": api_before,
                "api_wait": api_wait,
                "api_after": api_after,
                "host_cpu": HOST_CPU,
                **process_commands(etcd.PROCESS),
            },
            timeout=60 + self.p.window,
            chains=WINDOWS,
        )
        return EtcdEvidence(
            node=node,
            health=HttpAnswer.of(s["health"]),
            readyz=HttpAnswer.of(s["readyz"]),
            metrics_before=metrics_of(s["etcd_before"]),
            metrics_after=metrics_of(s["etcd_after"]),
            api_before=metrics_of(s["api_before"]),
            api_after=metrics_of(s["api_after"]),
            window_s=self.p.window,
            process=ProcessState.of(etcd.PROCESS, s),
            cpu=HostCpu.parse(s["host_cpu"].output),
        )

    def assess(self, ev: EtcdEvidence) -> list[Assessed]:
        return [
            assess_process(
                "etcd",
                ev.node,
                ev.process,
                frozen_effect="the API server's reads and writes hang",
                down_effect="the API server cannot read or write anything and fails its readiness",
            ),
            self._health(ev),
            self._leader(ev),
            self._disk(ev),
            self._requests(ev),
        ]

    def _health(self, ev: EtcdEvidence) -> Assessed:
        h, r = ev.health, ev.readyz
        failing = failing_checks(r.body)
        e = Evidence(
            "health",
            f"curl {ETCD_METRICS_URL}/health and /readyz?verbose on {ev.node}",
            {"health": h.body[:200] or h.describe(), "readyz": r.describe(), "failing": ", ".join(failing) or None},
        )
        if h.answered and h.code == 200 and '"health":"true"' in h.body.replace(" ", ""):
            return Assessed(e)
        if h.unread:
            return Assessed(e, (uncollected("etcd", ev.node, "/health", h.unread, e),))
        alarm = etcd.alarm(h.body) if h.answered else ""
        if not h.answered:
            title, cause = (
                f"etcd does not answer on :{etcd.METRICS_PORT}",
                "etcd is not running or hangs (see the process check)",
            )
        elif alarm:
            title, cause = f"etcd has raised alarm {alarm}", _ALARMS.get(alarm, "etcd refuses writes while it holds")
            cause += _size_of_quota(ev.metrics_after) if alarm == "NOSPACE" else ""
        else:
            title = f"etcd reports itself unhealthy: {h.body[:120]}"
            cause = "etcd cannot serve: no leader, a corrupt or full database, or an alarm (NOSPACE)"
        return Assessed(
            e,
            (
                Finding(
                    "critical",
                    "etcd",
                    title,
                    cause,
                    (e,),
                    (
                        *(
                            ("etcdctl alarm list; etcdctl compact <revision>; etcdctl defrag; etcdctl alarm disarm",)
                            if alarm
                            else ()
                        ),
                        "crictl logs $(crictl ps --name '^etcd$' -q) on the control-plane node",
                        f"curl '{ETCD_METRICS_URL}/readyz?verbose' for the failing check",
                    ),
                ),
            ),
        )

    def _leader(self, ev: EtcdEvidence) -> Assessed:
        m = ev.metrics_after
        source = f"etcd_server_has_leader, etcd_mvcc_db_total_size_in_bytes from {ETCD_METRICS_URL}/metrics"
        if not m:
            return Assessed(Evidence("leader", source, {"error": m.error}, available=False))
        has_leader = m.total("etcd_server_has_leader")
        size, quota = m.total("etcd_mvcc_db_total_size_in_bytes"), m.total("etcd_server_quota_backend_bytes")
        e = Evidence(
            "leader",
            source,
            {"has_leader": has_leader == 1},
            metrics=rounded(
                [
                    ("has_leader", has_leader),
                    ("leader_changes_total", m.total("etcd_server_leader_changes_seen_total")),
                    ("proposals_failed_total", m.total("etcd_server_proposals_failed_total")),
                    ("db_bytes", size),
                    ("quota_bytes", quota),
                ]
            ),
        )
        findings = []
        if has_leader == 0:
            findings.append(
                Finding(
                    "critical",
                    "etcd",
                    "etcd has no leader",
                    "without a leader etcd accepts no writes: every API write fails",
                    (e,),
                    ("check every etcd member's logs and their network",),
                )
            )
        if size and quota and size > self.p.db_quota_share * quota:
            findings.append(
                Finding(
                    "warning",
                    "etcd",
                    f"etcd database at {size / quota:.0%} of its quota",
                    "at the quota etcd raises NOSPACE and refuses writes",
                    (e,),
                    ("etcdctl compact and defrag; raise --quota-backend-bytes",),
                )
            )
        return Assessed(e, tuple(findings))

    def _disk(self, ev: EtcdEvidence) -> Assessed:
        source = (
            f"etcd_disk_wal_fsync_duration_seconds, etcd_disk_backend_commit_duration_seconds, {seconds(ev.window_s)}"
        )
        if not ev.metrics_after:
            return Assessed(Evidence("disk-latency", source, {"error": ev.metrics_after.error}, available=False))
        values: dict[str, float | None] = {}
        slow: list[str] = []
        for name, metric, limit in (
            ("wal_fsync", "etcd_disk_wal_fsync_duration_seconds", self.p.fsync_p99),
            ("backend_commit", "etcd_disk_backend_commit_duration_seconds", self.p.commit_p99),
        ):
            hist, basis = windowed(ev.metrics_after.histogram(metric), ev.metrics_before.histogram(metric))
            if hist is None or basis != "window":
                continue  # no fsync in the window: nothing to judge now
            p99 = hist.quantile(0.99)
            values[f"{name}_p99_s"], values[f"{name}_count"] = p99, hist.count
            if p99 is not None and hist.slow(limit, self.p.min_slow):
                slow.append(f"{name} p99 {p99 * 1000:.0f} ms > {limit * 1000:.0f} ms")
        e = Evidence("disk-latency", source, {"window_s": ev.window_s}, metrics=rounded(values.items(), 5))
        if not slow:
            return Assessed(e)
        return Assessed(
            e,
            (
                Finding(
                    "warning",
                    "etcd",
                    f"etcd's disk is slow: {'; '.join(slow)}",
                    "every write waits for the WAL fsync: a slow or shared disk slows the whole API and can cost "
                    "leadership",
                    (e,),
                    ("put etcd's data dir on a faster, dedicated disk", "iostat -x 1 on the host: look at await"),
                ),
            ),
        )

    def _requests(self, ev: EtcdEvidence) -> Assessed:
        window = seconds(ev.window_s)
        source = f"etcd_request_duration_seconds from {apiserver.URL}/metrics (the API server's side), {window}"
        if not ev.api_after:
            return Assessed(Evidence("request-latency", source, {"error": ev.api_after.error}, available=False))
        hist, basis = windowed(
            ev.api_after.histogram("etcd_request_duration_seconds"),
            ev.api_before.histogram("etcd_request_duration_seconds"),
            min_count=5,
        )
        if hist is None or basis != "window":
            return Assessed(Evidence("request-latency", source, {"window_s": ev.window_s, "requests": 0}))
        p99 = hist.quantile(0.99)
        e = Evidence(
            "request-latency",
            source,
            {"window_s": ev.window_s, "requests": hist.count},
            metrics=rounded([("p99_s", p99), ("mean_s", hist.mean)], 5),
        )
        if p99 is None or not hist.slow(self.p.request_p99, self.p.min_slow):
            return Assessed(e)
        cpu = Evidence(
            "host-cpu",
            f"{HOST_CPU} on {ev.node}",
            {"cpu_pressure_some_avg10_pct": ev.cpu.pressure, "load1": ev.cpu.load1, "cpus": ev.cpu.cpus},
        )
        if ev.cpu.busy:
            return Assessed(
                e,
                (
                    Finding(
                        "warning",
                        "etcd",
                        f"the API server's etcd requests are slow: p99 {seconds(p99)}, on a busy host CPU",
                        f"the host's CPU is saturated ({ev.cpu.words()}): etcd and the API server wait for a CPU like "
                        "every "
                        "other process, so each request takes longer although the disk keeps up",
                        (e, cpu),
                        ("top on the host: what else is using the CPUs", "give the control plane more CPU"),
                        entity=HOST,  # the root cause: every process on the host waits, the API server's too
                        affects=(HOST, "component/etcd", "component/apiserver"),
                    ),
                ),
            )
        return Assessed(
            e,
            (
                Finding(
                    "warning",
                    "etcd",
                    f"the API server's etcd requests are slow: p99 {seconds(p99)}",
                    "etcd answers slowly (disk, CPU, a large database) or the path to it drops packets",
                    (e, cpu),
                    ("look at etcd's disk latency and logs ('apply request took too long')",),
                ),
            ),
        )
