"""The marker `cluster up` leaves in a cluster it built; a run refuses a cluster without it (chaoskit.safety)."""

from __future__ import annotations

from chaoskit import __version__

MARKER = "chaoskit-cluster"


def marker_configmap(kind_config: str = "") -> dict[str, object]:
    """The marker, with the fingerprint of the kind config the cluster was made from (chaoskit.cluster.config)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": MARKER, "namespace": "kube-system", "labels": {"chaoskit.dev/owned": "true"}},
        "data": {"createdBy": f"chaoskit {__version__}", "kindConfig": kind_config},
    }
