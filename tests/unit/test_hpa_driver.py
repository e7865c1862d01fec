"""The HPA driver's scale-back: it makes the state it waits for happen, and says what the HPA holds when it cannot."""

from __future__ import annotations

import pytest

from chaoskit.env import Env
from chaoskit.measurements import hpa_driver
from chaoskit.seams.kube import FakeKube, KubeError
from chaoskit.seams.nodeexec import FakeNodeExec

NS = "bench"
HPA = f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers/web"
DEPLOYMENT = f"/apis/apps/v1/namespaces/{NS}/deployments/web"
CPU = [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 28}}}]


def env_at(replicas: int) -> Env:
    kube = FakeKube(
        {
            HPA: {
                "spec": {"minReplicas": 1, "maxReplicas": 26},
                "status": {"currentReplicas": replicas, "desiredReplicas": replicas, "currentMetrics": CPU},
            },
            DEPLOYMENT: {"status": {"readyReplicas": replicas}},
        }
    )
    return Env(kube, FakeNodeExec(), "chaoskit")


def test_scale_back_lowers_the_ceiling_to_one_so_idle_pods_above_target_cannot_hold_it_up() -> None:
    env = env_at(1)
    hpa_driver.scale_back(env, NS)
    assert ("PATCH", HPA) in env.kube.calls  # type: ignore[attr-defined]
    spec = env.kube.get(HPA)["spec"]
    assert spec["minReplicas"] == 1 and spec["maxReplicas"] == 1


def test_a_scale_back_that_does_not_happen_says_what_the_hpa_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hpa_driver, "SCALE_DOWN_TIMEOUT", 0.0)
    env = env_at(3)
    with pytest.raises(KubeError, match=r"the HPA holds 3 replicas \(desired 3, min 1, max 1, cpu 28%\)"):
        hpa_driver.scale_back(env, NS)
