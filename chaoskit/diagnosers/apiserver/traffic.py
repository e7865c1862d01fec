"""The API server's traffic over the look's window: server errors, latency against the SLOs, open watches, and
whether chaoskit's own client got through."""

from __future__ import annotations

from chaoskit.components import apiserver, flowcontrol
from chaoskit.diagnosers.apiserver.evidence import API, HEALTH_PATHS, MUTATING, ApiServerEvidence, ApiServerParams
from chaoskit.diagnosers.kit.base import Assessed, Evidence, Finding, Severity
from chaoskit.diagnosers.kit.common import items, rounded
from chaoskit.figures import seconds
from chaoskit.seams.scrape import Labels, counter_delta, windowed


def errors(p: ApiServerParams, ev: ApiServerEvidence) -> Assessed:
    now, before = ev.metrics_after, ev.metrics_before
    source = f"apiserver_request_total from {API}/metrics, two scrapes {seconds(ev.window_s)} apart"
    if not now:
        return Assessed(Evidence("request-errors", source, {"error": now.error or "no samples"}, available=False))
    total = counter_delta(
        now.total("apiserver_request_total", _is_request), before.total("apiserver_request_total", _is_request)
    )
    errors = (
        counter_delta(now.total("apiserver_request_total", _is_5xx), before.total("apiserver_request_total", _is_5xx))
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
    if not total or total < p.min_requests or ratio < p.error_ratio_warning:
        return Assessed(e)
    severity: Severity = "critical" if ratio >= p.error_ratio_critical else "warning"
    return Assessed(
        e,
        (
            Finding(
                severity,
                "apiserver",
                f"{ratio:.1%} of API requests failed with 5xx in the last {seconds(ev.window_s)}",
                "the API server answers with server errors: usually its storage (etcd) failing or slow, or overload",
                (e,),
                ("check /readyz?verbose and etcd health", "crictl logs of kube-apiserver for the failing requests"),
            ),
        ),
    )


def latency(p: ApiServerParams, ev: ApiServerEvidence) -> Assessed:
    source = f"apiserver_request_duration_seconds from {API}/metrics, window of {seconds(ev.window_s)}"
    if not ev.metrics_after:
        return Assessed(Evidence("request-latency", source, {"error": ev.metrics_after.error}, available=False))
    classes = {
        "mutating": (_mutating, p.mutating_p99),
        "get": (_get, p.read_p99),
        "list": (_list, p.list_p99),
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
        if hist.slow(limit, p.min_slow):
            slow.append(f"{name} p99 {seconds(p99)} > {seconds(limit)}")
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
                touches=("component/etcd", "host/cpu"),  # a slow etcd or a busy host, when found, is the cause
            ),
        ),
    )


def watches(p: ApiServerParams, ev: ApiServerEvidence) -> Assessed:
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
    crowded = [(k, v) for k, v in top if v > p.max_watches_per_resource]
    if total <= p.max_watches and not crowded:
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


def client_view(ev: ApiServerEvidence) -> Assessed:
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
                (
                    "kubectl config view --minify: the server and the CA",
                    f"docker port <control-plane node> {apiserver.PORT}",
                ),
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


def fairness(p: ApiServerParams, ev: ApiServerEvidence) -> Assessed:
    """API Priority and Fairness: a FlowSchema whose requests were rejected (429) in the window, or pile up in its
    priority level's queues, names the clients that flood the API server (a request surge) by their FlowSchema."""
    source = f"{flowcontrol.REJECTED}, {flowcontrol.IN_QUEUE} from {API}/metrics, window of {seconds(ev.window_s)}"
    if not ev.metrics_after:
        return Assessed(Evidence("priority-and-fairness", source, {"error": ev.metrics_after.error}, available=False))
    found = flowcontrol.pressure(ev.metrics_before, ev.metrics_after)
    e = Evidence(
        "priority-and-fairness",
        source,
        {"rejected": sum(x.rejected for x in found), "queued": sum(x.queued for x in found)},
        conditions=tuple(
            f"{x.flow_schema} ({x.priority_level}): {x.rejected:g} rejected {', '.join(x.reasons)}, {x.queued:g} queued"
            for x in found[:5]
        ),
    )
    schemas = items(ev.flowschemas) if ev.flowschemas is not None and ev.flowschemas.ok else []
    findings = [
        _flooded(x, flowcontrol.matches(schemas, x.flow_schema), e)
        for x in found
        if x.rejected > 0 or x.queued >= p.queued_warning
    ]
    return Assessed(e, tuple(findings[:3]))


def _flooded(x: flowcontrol.Pressure, whom: tuple[str, ...], e: Evidence) -> Finding:
    """A priority level that rejects or queues one FlowSchema's requests: the FlowSchema, and the clients it matches
    by name (a service account, a user; a group is too wide to blame), are the cause."""
    clients = tuple(w for w in whom if not w.startswith("group/"))
    return Finding(
        "warning",
        "apiserver",
        "API Priority and Fairness "
        + (f"rejects {x.rejected:g} request(s)" if x.rejected else f"queues {x.queued:g} request(s)")
        + f" of FlowSchema {x.flow_schema} (priority level {x.priority_level})"
        + (f", which matches {', '.join(whom[:3])}" if whom else ""),
        f"the clients that FlowSchema {x.flow_schema} matches send more than priority level {x.priority_level} "
        "serves: their requests wait in its queues and then get HTTP 429 (a request surge, a controller in a "
        "hot loop), while other levels keep their share",
        (e,),
        (
            f"kubectl get flowschema {x.flow_schema} -o yaml: whom it matches",
            "kubectl get --raw /debug/api_priority_and_fairness/dump_requests: who waits now",
            *((f"find what runs as {clients[0]} and slow it down",) if clients else ()),
        ),
        entity=f"flowschema/{x.flow_schema}",
        co_causes=clients,
        affects=("component/apiserver",),
    )
