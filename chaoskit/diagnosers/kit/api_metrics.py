"""The window over the API server's metrics that the API server and etcd diagnosers share (one scrape, read once)."""

from __future__ import annotations

from chaoskit.components import admission, apiserver, flowcontrol
from chaoskit.diagnosers.kit.sources import window_wait
from chaoskit.seams.scrape import scrape_command

# what a diagnosis reads of the API server's metrics, its own and its etcd client's: one scrape serves both diagnosers
API_METRICS = (
    "apiserver_request_total",
    "apiserver_request_duration_seconds",
    "apiserver_longrunning_requests",
    "apiserver_registered_watchers",
    "process_resident_memory_bytes",
    "etcd_request_duration_seconds",
    *admission.METRICS,  # each webhook's calls: a few series per webhook, read by the API server diagnoser
    *flowcontrol.METRICS,  # API Priority and Fairness: rejected and queued requests per FlowSchema
)
# of the two latency histograms (thousands of lines: a series per resource), only the labels judged by
KEEP = {
    "apiserver_request_duration_seconds": ("verb", "scope", "subresource", "le"),
    "etcd_request_duration_seconds": ("le",),
}


def metrics_window(window: float) -> tuple[str, str, str]:
    """The node-script commands of a window over the API server's metrics (scrape, wait, scrape): the API server and
    etcd diagnosers ask for the same ones, so a batch runs them once."""
    scrape = scrape_command(f"{apiserver.URL}/metrics", API_METRICS, client_cert=True, keep=KEEP)
    return scrape, window_wait(window), scrape
