"""API server faults: serving.py (down, etcd connection timeout, expired serving certificate, leaked watch
connections), admission.py (a failing admission webhook) and slow_webhook.py (one that never answers, failing
open)."""

from chaoskit.faults.apiserver.admission import AdmissionWebhookFailing, WebhookParams
from chaoskit.faults.apiserver.serving import (
    ETCD_TAG,
    ApiServerCertExpired,
    ApiServerDown,
    EtcdTimeout,
    WatchLeak,
    WatchLeakParams,
    _watch_script,
)
from chaoskit.faults.apiserver.slow_webhook import AdmissionWebhookSlow, SlowWebhookParams

__all__ = [
    "ETCD_TAG",
    "AdmissionWebhookFailing",
    "AdmissionWebhookSlow",
    "ApiServerCertExpired",
    "ApiServerDown",
    "EtcdTimeout",
    "WatchLeak",
    "SlowWebhookParams",
    "WatchLeakParams",
    "WebhookParams",
    "_watch_script",
]
