"""API server faults: serving.py (down, etcd connection timeout, expired serving certificate, leaked watch
connections) and admission.py (a failing admission webhook)."""

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

__all__ = [
    "ETCD_TAG",
    "AdmissionWebhookFailing",
    "ApiServerCertExpired",
    "ApiServerDown",
    "EtcdTimeout",
    "WatchLeak",
    "WatchLeakParams",
    "WebhookParams",
    "_watch_script",
]
