"""The scalability-slos check on the real cluster: a healthy cluster meets the SLOs, and the same window judged
against limits no API server meets fails, so the check reads the components' own latency and can say no."""

from __future__ import annotations

import threading

import pytest

from chaoskit import workloads
from chaoskit.checks.slo import ScalabilitySlos, SloParams
from chaoskit.env import Env
from chaoskit.seams.kube import Kube
from tests.e2e.radius import WATCHES_CLUSTER, namespace, touches

pytestmark = pytest.mark.e2e


@touches(namespace("e2e-slo", "watches"), WATCHES_CLUSTER)
def test_a_healthy_cluster_meets_the_slos_and_a_pod_started_in_the_window_is_timed_by_its_kubelet(
    kube: Kube, cluster: str, ns: str
) -> None:
    env = Env.for_kind(kube, cluster)
    kube.apply(workloads.namespace(ns))
    pod = workloads.web_deployment(ns, "slo-probe")["spec"]["template"]
    starter = threading.Timer(
        2.0,
        lambda: kube.create(
            f"/api/v1/namespaces/{ns}/pods",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "slo-probe", "namespace": ns},
                "spec": pod["spec"],
            },
        ),
    )
    starter.start()
    outcome = ScalabilitySlos().run(env, SloParams(window=10))  # the pod starts 2 s in, in about 2 s
    starter.join()
    print(outcome.detail)
    assert outcome.ok, outcome.detail
    assert "kinds of API call" in outcome.detail and "none made" not in outcome.detail
    assert "pod startup p99" in outcome.detail, "the pod started in the window must be timed by its kubelet"

    strict = ScalabilitySlos().run(env, SloParams(window=5, singleObjectP99=0.0001, listP99=0.0001, minSlow=1))
    print(strict.detail)
    assert not strict.ok and "breached:" in strict.detail, strict.detail
