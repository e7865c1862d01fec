"""API server diagnosis, read from inside the control-plane node so it works when the API itself does not answer.

The document's troubleshooting order: the API server first (is it there, is it ready, which readiness check
fails), then etcd. Errors and latency are judged over a short window between two scrapes, never since the process
started, so a fault that is over does not keep the report red.
"""

# Over 300 lines: one component's evidence and every judgement of it, read in one place (next: evidence apart).

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import Field

from chaoskit.components import apiserver
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Finding, Severity, register
from chaoskit.diagnosers.kit.common import (
    HttpAnswer,
    excerpt,
    expiry_findings,
    failing_checks,
    http_command,
    iso,
    matching,
    metrics_of,
    rounded,
    uncollected,
)
from chaoskit.diagnosers.kit.sources import Sources, window_wait
from chaoskit.diagnosers.kit.staticpod import ProcessState, assess_process, process_commands
from chaoskit.model.params import FaultParams
from chaoskit.seams.certs import cert_dates_command, parse_not_after, served_cert_command
from chaoskit.seams.scrape import Labels, Metrics, counter_delta, scrape_command, windowed

API = apiserver.URL
CLIENT_CERTS = apiserver.CLIENT_CERTS
SERVING_FILE = apiserver.SERVING_CERT
METRICS = (
    "apiserver_request_total",
    "apiserver_request_duration_seconds",
    "apiserver_longrunning_requests",
    "apiserver_registered_watchers",
    "process_resident_memory_bytes",
)
MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE", "APPLY"})
HEALTH_PATHS = ("/healthz", "/livez", "/readyz")  # in apiserver_request_total's subresource label, as requested
WINDOW = ("metrics_before", "wait", "metrics_after")  # no second scrape when the first got no answer


class ApiServerParams(FaultParams):
    window: float = Field(default=5.0, ge=1, le=60, description="Seconds between the two metrics scrapes.")
    error_ratio_warning: float = Field(default=0.01, description="5xx share of requests in the window: warning.")
    error_ratio_critical: float = Field(default=0.05, description="5xx share of requests in the window: critical.")
    min_requests: int = Field(default=20, description="Fewer requests in the window than this: no error verdict.")
    mutating_p99: float = Field(default=1.0, description="Seconds; the Kubernetes SLO for mutating calls.")
    read_p99: float = Field(default=1.0, description="Seconds; the SLO for single-object reads.")
    list_p99: float = Field(default=5.0, description="Seconds; the SLO for namespace-scoped LISTs.")
    min_slow: int = Field(default=3, description="Requests over the SLO in the window before p99 counts as slow.")
    max_watches: int = Field(default=500, description="Open WATCH requests in all: more looks like a leak.")
    max_watches_per_resource: int = Field(default=150, description="Open WATCH requests on one resource and scope.")
    cert_warning_days: float = Field(default=30, description="Certificates expiring sooner than this: warning.")


@dataclass(frozen=True)
class ApiServerEvidence:
    node: str
    collected_at: float
    readyz: HttpAnswer
    livez: HttpAnswer
    served_not_after: float | None  # what 127.0.0.1:6443 presents
    file_not_after: Mapping[str, float | None]  # serving file and client certificates
    metrics_before: Metrics
    metrics_after: Metrics
    window_s: float
    process: ProcessState
    etcd_filter_rules: tuple[str, ...]  # packet filter rules that touch etcd's client port
    client_view: str = ""  # why chaoskit's own API client could not reach the API server ("" when it could)


@register
class ApiServerDiagnoser(Diagnoser[ApiServerEvidence, ApiServerParams]):
    """kube-apiserver: process and manifest, /livez and /readyz per check, certificates, 5xx, latency, watches."""

    component = "apiserver"
    Params = ApiServerParams

    def collect(self, src: Sources, node: str) -> ApiServerEvidence:
        scrape = scrape_command(f"{API}/metrics", METRICS, client_cert=True)
        s = src.sections(
            node,
            {
                "readyz": http_command(f"{API}/readyz?verbose"),
                "livez": http_command(f"{API}/livez?verbose"),
                "served": served_cert_command(apiserver.ADDRESS, "serving"),
                "files": cert_dates_command({"serving-file": SERVING_FILE, **CLIENT_CERTS}),
                "metrics_before": scrape,
                "wait": window_wait(self.p.window),
                "metrics_after": scrape,
                "etcd_filter": f"iptables -w 2 -S 2>/dev/null | grep -E -- '--[ds]port {apiserver.ETCD_PORT}' || true",
                **process_commands(apiserver.PROCESS),
            },
            timeout=60 + self.p.window,
            chains=[WINDOW],
        )
        return ApiServerEvidence(
            node=node,
            collected_at=src.clock(),
            readyz=HttpAnswer.of(s["readyz"]),
            livez=HttpAnswer.of(s["livez"]),
            served_not_after=parse_not_after(s["served"].output).get("serving"),
            file_not_after=parse_not_after(s["files"].output),
            metrics_before=metrics_of(s["metrics_before"]),
            metrics_after=metrics_of(s["metrics_after"]),
            window_s=self.p.window,
            process=ProcessState.of(apiserver.PROCESS, s),
            etcd_filter_rules=tuple(line for line in s["etcd_filter"].output.splitlines() if line.startswith("-A")),
            client_view=src.api.down,
        )

    def assess(self, ev: ApiServerEvidence) -> list[Assessed]:
        return [
            assess_process(
                "apiserver",
                ev.node,
                ev.process,
                frozen_effect="every API call hangs; the whole cluster is uncontrollable",
                down_effect="the whole cluster is uncontrollable (running pods keep running)",
            ),
            self._readyz(ev),
            self._livez(ev),
            self._serving_cert(ev),
            self._client_certs(ev),
            self._watches(ev),  # before errors and latency: a watch leak is a cause of slow requests, not a symptom
            self._errors(ev),
            self._latency(ev),
            self._client_view(ev),
        ]

    def _readyz(self, ev: ApiServerEvidence) -> Assessed:
        r = ev.readyz
        failing = failing_checks(r.body)
        e = Evidence(
            "readyz",
            f"curl -k '{API}/readyz?verbose' on {ev.node}",
            {"answer": r.describe(), "failing": ", ".join(failing) or None},
            log_lines=matching(excerpt(ev.process.log, ("etcd", "2379")), "etcd", "2379", "deadline"),
        )
        if r.answered and r.code == 200:
            return Assessed(e)
        if r.unread:
            return Assessed(e, (uncollected("apiserver", ev.node, "/readyz", r.unread, e),))
        if not r.answered and not r.timed_out:
            cause = (
                "kube-apiserver is not running (see the process check)"
                if not ev.process.running
                else "the process runs but does not accept connections on :6443 (starting, or stuck)"
            )
            return Assessed(
                e,
                (
                    Finding(
                        "critical",
                        "apiserver",
                        "The API server does not answer on 127.0.0.1:6443",
                        f"{cause}; nothing can read or change the cluster",
                        (e,),
                        (
                            "crictl ps -a --name '^kube-apiserver$' and crictl logs on the control-plane node",
                            "check etcd next: the API server cannot start without it",
                        ),
                    ),
                ),
            )
        if "etcd" in failing or r.timed_out:
            return Assessed(e, (self._etcd_unreachable(ev, e, timed_out=r.timed_out),))
        return Assessed(
            e,
            (
                Finding(
                    "critical",
                    "apiserver",
                    f"/readyz fails: {', '.join(failing) or f'HTTP {r.code}'}",
                    "a readiness check of the API server fails: it answers but will not serve some or all requests",
                    (e,),
                    (
                        f"curl -k '{API}/readyz?verbose' on the control-plane node; the [-] lines name the failing "
                        "checks",
                        "crictl logs of kube-apiserver for the reason",
                    ),
                ),
            ),
        )

    def _etcd_unreachable(self, ev: ApiServerEvidence, e: Evidence, *, timed_out: bool) -> Finding:
        rules = ev.etcd_filter_rules
        cause = "the API server cannot reach etcd: requests hang until they time out"
        if rules:
            cause += f"; packet filter rules on the node match etcd's port: {'; '.join(rules)}"
        filt = Evidence("readyz", "iptables -S on the control-plane node", {"etcd_rules": len(rules)}, log_lines=rules)
        title = "/readyz timed out: the API server hangs" if timed_out else "/readyz: [-]etcd failed"
        return Finding(
            "critical",
            "apiserver",
            f"{title} (etcd connection)",
            cause,
            (e, filt) if rules else (e,),
            (
                "curl http://127.0.0.1:2381/health on the control-plane node: is etcd itself healthy? "
                "(chaoskit diagnose etcd)",
                "iptables -S OUTPUT | grep 2379: remove DROP/REJECT rules between the API server and etcd",
                "crictl logs of kube-apiserver: look for etcd 'context deadline exceeded'",
            ),
        )

    def _livez(self, ev: ApiServerEvidence) -> Assessed:
        r = ev.livez
        failing = failing_checks(r.body)
        e = Evidence(
            "livez",
            f"curl -k '{API}/livez?verbose' on {ev.node}",
            {"answer": r.describe(), "failing": ", ".join(failing) or None},
        )
        if not r.answered or r.code == 200:
            return Assessed(e)  # no answer at all is the readyz check's finding
        return Assessed(
            e,
            (
                Finding(
                    "critical",
                    "apiserver",
                    f"/livez fails: {', '.join(failing) or f'HTTP {r.code}'}",
                    "the API server reports itself not alive; kubelet's liveness probe will restart it",
                    (e,),
                    ("crictl logs of kube-apiserver on the control-plane node",),
                ),
            ),
        )

    def _serving_cert(self, ev: ApiServerEvidence) -> Assessed:
        served, on_disk = ev.served_not_after, ev.file_not_after.get("serving-file")
        e = Evidence(
            "serving-certificate",
            f"openssl s_client -connect 127.0.0.1:6443 and openssl x509 -enddate {SERVING_FILE} on {ev.node}",
            {"served_not_after": iso(served), "file_not_after": iso(on_disk)},
        )
        findings = expiry_findings(
            "apiserver",
            "The API server's serving certificate",
            served if served is not None else on_disk,
            ev.collected_at,
            self.p.cert_warning_days,
            e,
            "every client that verifies the cluster CA (kubelets, controllers, kubectl) fails to connect",
            (
                f"kubeadm certs renew apiserver on {ev.node} (kube-apiserver reloads it from disk)",
                f"openssl x509 -in {SERVING_FILE} -noout -dates to confirm",
            ),
        )
        return Assessed(e, findings)

    def _client_certs(self, ev: ApiServerEvidence) -> Assessed:
        certs = {k: v for k, v in ev.file_not_after.items() if k in CLIENT_CERTS}
        e = Evidence(
            "client-certificates",
            f"openssl x509 -enddate on {', '.join(CLIENT_CERTS.values())}",
            {k: iso(v) for k, v in certs.items()},
        )
        findings: list[Finding] = []
        for label, not_after in certs.items():
            findings += expiry_findings(
                "apiserver",
                f"The API server's client ({label}) certificate",
                not_after,
                ev.collected_at,
                self.p.cert_warning_days,
                e,
                f"the API server cannot authenticate as {label} (etcd, kubelets, aggregated APIs)",
                (f"kubeadm certs renew {label} on {ev.node}, then restart kube-apiserver",),
            )
        return Assessed(e, tuple(findings))

    def _errors(self, ev: ApiServerEvidence) -> Assessed:
        now, before = ev.metrics_after, ev.metrics_before
        source = f"apiserver_request_total from {API}/metrics, two scrapes {ev.window_s:g}s apart"
        if not now:
            return Assessed(Evidence("request-errors", source, {"error": now.error or "no samples"}, available=False))
        total = counter_delta(
            now.total("apiserver_request_total", _is_request), before.total("apiserver_request_total", _is_request)
        )
        errors = (
            counter_delta(
                now.total("apiserver_request_total", _is_5xx), before.total("apiserver_request_total", _is_5xx)
            )
            or 0.0
        )
        ratio = errors / total if total else 0.0
        by_code = now.group("apiserver_request_total", "code", _is_5xx)
        codes = [(f"5xx_total{{code={c}}}", v) for c, v in by_code.items()]
        e = Evidence(
            "request-errors",
            source,
            {"window_s": ev.window_s, "requests": total, "5xx": errors},
            metrics=rounded([("5xx_ratio", ratio), *codes]),
        )
        if not total or total < self.p.min_requests or ratio < self.p.error_ratio_warning:
            return Assessed(e)
        severity: Severity = "critical" if ratio >= self.p.error_ratio_critical else "warning"
        return Assessed(
            e,
            (
                Finding(
                    severity,
                    "apiserver",
                    f"{ratio:.1%} of API requests failed with 5xx in the last {ev.window_s:g}s",
                    "the API server answers with server errors: usually its storage (etcd) failing or slow, or "
                    "overload",
                    (e,),
                    ("check /readyz?verbose and etcd health", "crictl logs of kube-apiserver for the failing requests"),
                ),
            ),
        )

    def _latency(self, ev: ApiServerEvidence) -> Assessed:
        source = f"apiserver_request_duration_seconds from {API}/metrics, window of {ev.window_s:g}s"
        if not ev.metrics_after:
            return Assessed(Evidence("request-latency", source, {"error": ev.metrics_after.error}, available=False))
        classes = {
            "mutating": (_mutating, self.p.mutating_p99),
            "get": (_get, self.p.read_p99),
            "list": (_list, self.p.list_p99),
        }
        values: dict[str, float | None] = {}
        slow: list[str] = []
        for name, (where, limit) in classes.items():
            hist, basis = windowed(
                ev.metrics_after.histogram("apiserver_request_duration_seconds", where),
                ev.metrics_before.histogram("apiserver_request_duration_seconds", where),
                min_count=5,
            )
            # only the window counts: a slow spell during an earlier fault must not colour a healthy cluster
            if hist is None or basis != "window":
                continue
            p99 = hist.quantile(0.99)
            values[f"{name}_p99_s"] = p99
            values[f"{name}_count"] = hist.count
            values[f"{name}_over_slo"] = hist.over(limit)
            if hist.slow(limit, self.p.min_slow):
                slow.append(f"{name} p99 {p99:.2f}s > {limit:g}s")
        e = Evidence("request-latency", source, {"window_s": ev.window_s}, metrics=rounded(values.items()))
        if not slow:
            return Assessed(e)
        return Assessed(
            e,
            (
                Finding(
                    "warning",
                    "apiserver",
                    f"API requests are slow: {'; '.join(slow)}",
                    "the API server is slow to answer: etcd latency, admission webhooks, or CPU starvation on the node",
                    (e,),
                    (
                        "chaoskit diagnose etcd: etcd request and fsync latency",
                        "top on the control-plane node: is kube-apiserver or etcd starved of CPU?",
                    ),
                ),
            ),
        )

    def _watches(self, ev: ApiServerEvidence) -> Assessed:
        m = ev.metrics_after
        source = f"apiserver_longrunning_requests{{verb=WATCH}}, apiserver_registered_watchers from {API}/metrics"
        if not m:
            return Assessed(Evidence("watches", source, {"error": m.error}, available=False))
        watches = m.select("apiserver_longrunning_requests", verb="WATCH")
        total = sum(s.value for s in watches)
        per: dict[str, float] = {}
        for s in watches:
            key = f"{s.labels.get('resource', '')}{'.' + s.labels['group'] if s.labels.get('group') else ''}"
            key += f" ({s.labels.get('scope', '')})"
            per[key] = per.get(key, 0.0) + s.value
        top = sorted(per.items(), key=lambda kv: -kv[1])[:5]
        registered = m.total("apiserver_registered_watchers")
        e = Evidence(
            "watches",
            source,
            {
                "open_watches": total,
                "registered_watchers": registered if registered is not None else "not exported",
                "top": ", ".join(f"{k}: {v:g}" for k, v in top),
            },
            metrics=rounded([("watches", total), ("resident_memory_bytes", m.total("process_resident_memory_bytes"))]),
        )
        crowded = [(k, v) for k, v in top if v > self.p.max_watches_per_resource]
        if total <= self.p.max_watches and not crowded:
            return Assessed(e)
        where = f"; most on {crowded[0][0]}: {crowded[0][1]:g}" if crowded else ""
        return Assessed(
            e,
            (
                Finding(
                    "warning",
                    "apiserver",
                    f"{total:g} open watch connections{where}",
                    "a client opens watches and never closes them (a watch leak): each holds API server memory and a "
                    "goroutine, and the fan-out slows every write",
                    (e,),
                    (
                        "find the client: kube-apiserver logs or audit logs by user agent for that resource's WATCHes",
                        "restart or fix the leaking client; the watches close with its connections",
                    ),
                ),
            ),
        )

    def _client_view(self, ev: ApiServerEvidence) -> Assessed:
        e = Evidence(
            "client-view",
            "chaoskit's API client (kubeconfig server and credentials)",
            {"reachable": not ev.client_view, "error": ev.client_view or None},
        )
        if not ev.client_view or not (ev.readyz.answered and ev.readyz.code == 200):
            return Assessed(e)  # a down API server is the readyz check's finding
        return Assessed(
            e,
            (
                Finding(
                    "warning",
                    "apiserver",
                    "The API server is ready on its node but unreachable through the kubeconfig",
                    f"{ev.client_view}: the kubeconfig's server address or port, the path to it (Docker port mapping), "
                    "or its TLS trust",
                    (e,),
                    ("kubectl config view --minify: the server and the CA", "docker port <control-plane node> 6443"),
                ),
            ),
        )


def _is_request(labels: Labels) -> bool:
    """An API request, not a probe of the server's own health: a 500 from /readyz (an unready check, e.g. etcd for
    a moment) is judged per check from /readyz itself, not counted as a request that failed."""
    return not labels.get("subresource", "").startswith(HEALTH_PATHS)


def _is_5xx(labels: Labels) -> bool:
    return _is_request(labels) and labels.get("code", "").startswith("5")


def _mutating(labels: Labels) -> bool:
    return labels.get("verb", "") in MUTATING


def _get(labels: Labels) -> bool:
    return labels.get("verb") == "GET" and labels.get("scope") == "resource" and not labels.get("subresource")


def _list(labels: Labels) -> bool:
    return labels.get("verb") == "LIST" and labels.get("scope") == "namespace"
