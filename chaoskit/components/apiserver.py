"""kube-apiserver: its process and static pod, where it answers, its certificates, and how it reaches etcd."""

from __future__ import annotations

from chaoskit.components import etcd
from chaoskit.components.common import local_url, manifest
from chaoskit.seams.certs import PKI

PROCESS = "kube-apiserver"
MANIFEST = manifest(PROCESS)
PORT = 6443
ADDRESS = f"127.0.0.1:{PORT}"  # asked from inside the control-plane node: works when the kubeconfig's path does not
URL = local_url(PORT, "")  # /readyz, /livez, /metrics and the API itself
SERVING_CERT, SERVING_KEY = f"{PKI}/apiserver.crt", f"{PKI}/apiserver.key"
# the certificates it authenticates with, to the kubelets, etcd and aggregated APIs (kubeadm's names)
CLIENT_CERTS = {
    "apiserver-kubelet-client": f"{PKI}/apiserver-kubelet-client.crt",
    "apiserver-etcd-client": f"{PKI}/apiserver-etcd-client.crt",
    "front-proxy-client": f"{PKI}/front-proxy-client.crt",
}
ETCD_HOST, ETCD_PORT = "127.0.0.1", etcd.CLIENT_PORT  # kubeadm's --etcd-servers=https://127.0.0.1:2379
# its latency per call without admission webhooks or priority-and-fairness queueing: what the scalability SLO judges
REQUEST_SLI = "apiserver_request_sli_duration_seconds"
SINGLE_OBJECT_VERBS = ("GET", "POST", "PUT", "PATCH", "DELETE", "APPLY")
OPEN_REQUESTS = "apiserver_longrunning_requests"  # open WATCH and CONNECT requests, by resource
REQUESTS = "apiserver_request_total"
