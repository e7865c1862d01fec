"""metrics-server: the resource metrics pipeline's middle (kubelets' resource metrics → metrics-server → the
metrics.k8s.io API the API server aggregates → the HPA), a Deployment in kube-system behind an APIService."""

from __future__ import annotations

NAMESPACE = "kube-system"
DEPLOYMENT = "metrics-server"
APISERVICE = "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io"
NODE_METRICS = "/apis/metrics.k8s.io/v1beta1/nodes"
