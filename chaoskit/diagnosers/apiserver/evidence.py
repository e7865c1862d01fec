"""What the API server diagnosis reads, and its thresholds: the evidence collected once per look."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import Field

from chaoskit.components import apiserver
from chaoskit.diagnosers.apiserver.admission import AdmissionEvidence
from chaoskit.diagnosers.kit.common import (
    HttpAnswer,
)
from chaoskit.diagnosers.kit.sources import Fetched
from chaoskit.diagnosers.kit.staticpod import ProcessState
from chaoskit.model.params import FaultParams
from chaoskit.seams.scrape import Metrics

API = apiserver.URL
CLIENT_CERTS = apiserver.CLIENT_CERTS
SERVING_FILE = apiserver.SERVING_CERT


MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE", "APPLY"})
HEALTH_PATHS = ("/healthz", "/livez", "/readyz")  # in apiserver_request_total's subresource label, as requested
WINDOW = ("metrics_before", "wait", "metrics_after")  # no second scrape when the first got no answer


class ApiServerParams(FaultParams):
    window: float = Field(default=1.0, ge=1, le=60, description="Seconds between the two metrics scrapes.")
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
    admission_p99: float = Field(default=1.0, description="Seconds; an admission webhook's p99 in the window: slow.")
    queued_warning: int = Field(
        default=20, description="Requests of one FlowSchema waiting in its priority level's queues: warning."
    )
    admission_deadline: float = Field(
        default=34.0,
        description="Seconds a create, update or patch may take, admission included (the API server's 34 s bound): "
        "webhooks on pod creation whose timeouts add up to this or more are a warning.",
    )


@dataclass(frozen=True)
class ApiServerEvidence:
    node: str
    collected_at: float
    readyz: HttpAnswer
    livez: HttpAnswer
    served_not_after: float | None  # what it presents on its port
    file_not_after: Mapping[str, float | None]  # serving file and client certificates
    metrics_before: Metrics
    metrics_after: Metrics
    window_s: float
    process: ProcessState
    etcd_filter_rules: tuple[str, ...]  # packet filter rules that touch etcd's client port
    client_view: str = ""  # why chaoskit's own API client could not reach the API server ("" when it could)
    admission: AdmissionEvidence | None = None  # the webhooks it calls, what is behind them, what they refused
    flowschemas: Fetched | None = None  # whom each FlowSchema matches, for naming who floods a priority level
