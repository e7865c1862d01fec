"""The scalability SLOs as a check: judged over the window between two scrapes, per kind of API call, and pod startup
pooled over the kubelets."""

from __future__ import annotations

from chaoskit.checks.slo import SloParams, judge_api, judge_pod_startup
from chaoskit.seams.scrape import Metrics

BOUNDS = (0.05, 0.1, 0.5, 1.0, 2.0, 5.0, 30.0, 60.0)


def _api(series: dict[tuple[str, str, str], list[float]]) -> Metrics:
    """The SLI histogram with these observations per (verb, resource, scope)."""
    lines = []
    for (verb, resource, scope), seen in series.items():
        labels = f'verb="{verb}",resource="{resource}",scope="{scope}",group="",subresource="",component="apiserver"'
        for le in (*BOUNDS, float("inf")):
            count, bound = sum(1 for s in seen if s <= le), "+Inf" if le == float("inf") else le
            lines.append(f'apiserver_request_sli_duration_seconds_bucket{{{labels},le="{bound}"}} {count}')
        lines.append(f"apiserver_request_sli_duration_seconds_count{{{labels}}} {len(seen)}")
        lines.append(f"apiserver_request_sli_duration_seconds_sum{{{labels}}} {sum(seen)}")
    return Metrics.parse("# TYPE apiserver_request_sli_duration_seconds histogram\n" + "\n".join(lines) + "\n")


def _kubelet(seen: list[float]) -> Metrics:
    lines = [
        f'kubelet_pod_start_sli_duration_seconds_bucket{{le="{"+Inf" if le == float("inf") else le}"}} '
        f"{sum(1 for s in seen if s <= le)}"
        for le in (*BOUNDS, float("inf"))
    ]
    lines += [
        f"kubelet_pod_start_sli_duration_seconds_count {len(seen)}",
        f"kubelet_pod_start_sli_duration_seconds_sum {sum(seen)}",
    ]
    return Metrics.parse("# TYPE kubelet_pod_start_sli_duration_seconds histogram\n" + "\n".join(lines) + "\n")


def test_only_the_window_counts_and_each_kind_of_call_has_its_own_limit() -> None:
    slow_before = [3.0] * 10  # a fault before the window: slow GETs that must not count now
    before = _api({("GET", "pods", "resource"): slow_before, ("LIST", "pods", "cluster"): [2.0] * 5})
    after = _api(
        {("GET", "pods", "resource"): [*slow_before, 0.02, 0.03, 0.04], ("LIST", "pods", "cluster"): [2.0] * 10}
    )
    judged = {j.what: j for j in judge_api(before, after, SloParams())}
    assert not judged["GET pods (resource)"].breached and judged["GET pods (resource)"].hist.count == 3
    assert not judged["LIST pods (cluster)"].breached, "2 s is well within a LIST's 30 s"
    assert judged["LIST pods (cluster)"].limit == 30.0 and judged["GET pods (resource)"].limit == 1.0


def test_a_kind_of_call_breaches_only_with_enough_observations_over_its_limit() -> None:
    before = _api({("PATCH", "nodes", "resource"): []})
    one = _api({("PATCH", "nodes", "resource"): [0.01] * 50 + [4.0]})
    many = _api({("PATCH", "nodes", "resource"): [0.01] * 50 + [4.0] * 5})
    assert not judge_api(before, one, SloParams())[0].breached, "one slow second is not a slow cluster"
    assert judge_api(before, many, SloParams())[0].breached
    assert judge_api(before, many, SloParams(minSlow=6))[0].breached is False


def test_pod_startup_pools_every_kubelet_s_window() -> None:
    before = [_kubelet([1.0]), _kubelet([])]
    after = [_kubelet([1.0, 8.0, 9.0]), _kubelet([7.0, 0.5])]
    judged = judge_pod_startup(before, after, SloParams())
    assert judged is not None and judged.hist.count == 4 and judged.breached, judged
    assert judge_pod_startup(before, before, SloParams()) is None, "no pod started: nothing judged, not a pass"
