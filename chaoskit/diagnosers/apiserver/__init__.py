"""API server diagnosis, read from inside the control-plane node so it works when the API itself does not answer.

The document's troubleshooting order: the API server first (is it there, is it ready, which readiness check
fails), then etcd. Errors and latency are judged over a short window between two scrapes, never since the process
started, so a fault that is over does not keep the report red.
"""

from __future__ import annotations

from chaoskit.components import apiserver, etcd, flowcontrol
from chaoskit.diagnosers.apiserver import admission
from chaoskit.diagnosers.apiserver.admission import assess_admission
from chaoskit.diagnosers.apiserver.evidence import (
    API,
    CLIENT_CERTS,
    HEALTH_PATHS,
    MUTATING,
    SERVING_FILE,
    WINDOW,
    ApiServerEvidence,
    ApiServerParams,
)
from chaoskit.diagnosers.apiserver.traffic import client_view, errors, fairness, latency, watches
from chaoskit.diagnosers.kit.api_metrics import metrics_window
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Finding, register
from chaoskit.diagnosers.kit.common import (
    HttpAnswer,
    excerpt,
    expiry_findings,
    failing_checks,
    http_command,
    iso,
    matching,
    metrics_of,
    uncollected,
)
from chaoskit.diagnosers.kit.sources import Sources
from chaoskit.diagnosers.kit.staticpod import ProcessState, assess_process, process_commands
from chaoskit.seams.certs import cert_dates_command, parse_not_after, served_cert_command

__all__ = [
    "API",
    "CLIENT_CERTS",
    "HEALTH_PATHS",
    "MUTATING",
    "SERVING_FILE",
    "WINDOW",
    "ApiServerDiagnoser",
    "ApiServerEvidence",
    "ApiServerParams",
]


@register
class ApiServerDiagnoser(Diagnoser[ApiServerEvidence, ApiServerParams]):
    """kube-apiserver: process and manifest, /livez and /readyz per check, certificates, 5xx, latency, watches,
    the admission webhooks it calls."""

    component = "apiserver"
    Params = ApiServerParams

    def collect(self, src: Sources, node: str) -> ApiServerEvidence:
        before, wait, after = metrics_window(self.p.window)
        flowschemas = src.api.soon(flowcontrol.FLOWSCHEMAS)  # read beside the node script
        s = src.sections(
            node,
            {
                "readyz": http_command(f"{API}/readyz?verbose"),
                "livez": http_command(f"{API}/livez?verbose"),
                "served": served_cert_command(apiserver.ADDRESS, "serving"),
                "files": cert_dates_command({"serving-file": SERVING_FILE, **CLIENT_CERTS}),
                "metrics_before": before,
                "wait": wait,
                "metrics_after": after,
                "etcd_filter": f"iptables -w 2 -S 2>/dev/null | grep -E -- '--[ds]port {apiserver.ETCD_PORT}' || true",
                **process_commands(apiserver.PROCESS),
            },
            timeout=60 + self.p.window,
            chains=[WINDOW],
        )
        process = ProcessState.of(apiserver.PROCESS, s)
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
            process=process,
            etcd_filter_rules=tuple(line for line in s["etcd_filter"].output.splitlines() if line.startswith("-A")),
            client_view=src.api.down,
            admission=admission.collect(
                src, metrics_of(s["metrics_before"]), metrics_of(s["metrics_after"]), self.p.window, process.log
            ),
            flowschemas=flowschemas(),
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
            watches(self.p, ev),  # before errors and latency: a watch leak is a cause of slow requests, not a symptom
            errors(self.p, ev),
            latency(self.p, ev),
            fairness(self.p, ev),
            client_view(ev),
            *(
                [
                    assess_admission(
                        ev.admission, ev.collected_at, slow_s=self.p.admission_p99, deadline_s=self.p.admission_deadline
                    )
                ]
                if ev.admission
                else []
            ),
        ]

    def _readyz(self, ev: ApiServerEvidence) -> Assessed:
        r = ev.readyz
        failing = failing_checks(r.body)
        e = Evidence(
            "readyz",
            f"curl -k '{API}/readyz?verbose' on {ev.node}",
            {"answer": r.describe(), "failing": ", ".join(failing) or None},
            log_lines=matching(
                excerpt(ev.process.log, ("etcd", apiserver.ETCD_PORT)), "etcd", apiserver.ETCD_PORT, "deadline"
            ),
        )
        if r.answered and r.code == 200:
            return Assessed(e)
        if r.unread:
            return Assessed(e, (uncollected("apiserver", ev.node, "/readyz", r.unread, e),))
        if not r.answered and not r.timed_out:
            cause = (
                "kube-apiserver is not running (see the process check)"
                if not ev.process.running
                else f"the process runs but does not accept connections on :{apiserver.PORT} (starting, or stuck)"
            )
            return Assessed(
                e,
                (
                    Finding(
                        "critical",
                        "apiserver",
                        f"The API server does not answer on {apiserver.ADDRESS}",
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
                f"curl {etcd.METRICS_BASE}/health on the control-plane node: is etcd itself healthy? "
                "(chaoskit diagnose etcd)",
                f"iptables -S OUTPUT | grep {apiserver.ETCD_PORT}: remove DROP/REJECT rules between the API server and "
                "etcd",
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
            f"openssl s_client -connect {apiserver.ADDRESS} and openssl x509 -enddate {SERVING_FILE} on {ev.node}",
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
