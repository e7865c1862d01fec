"""chaoskit.model.slo: probe samples judged phase by phase, with what broke and by how much."""

from __future__ import annotations

from chaoskit.model.probes import Probe
from chaoskit.model.slo import Phases, ProbeSample, judge

HTTP = Probe.model_validate(
    {
        "name": "shop",
        "http": {"url": "http://shop/"},
        "when": ["before", "during", "after", "effect"],
        "slo": {"successRate": 99, "p99": 0.3},
    }
)
PHASES = Phases(before=(0, 10), during=[(12, 20)], after=(25, 40), effects=[12.5])


def _samples(t0: float, t1: float, latency: float = 0.05, failing: set[float] = frozenset()) -> list[ProbeSample]:
    out, t = [], t0
    while t < t1:
        bad = t in failing
        out.append(ProbeSample(t, not bad, None if bad else latency, "HTTP 502" if bad else ""))
        t += 0.5
    return out


def test_a_fault_that_fails_requests_fails_only_the_phase_it_held_in_with_the_figures() -> None:
    samples = (
        _samples(0, 10)
        + _samples(12, 20, failing={13.0, 13.5})
        + _samples(20, 25, failing={21.0})
        + _samples(25, 40, latency=0.4)
    )
    before, during, after, effect = judge(HTTP, samples, PHASES)
    assert before.ok and before.samples == 20 and before.success_rate == 100.0 and before.latency["p99"] == 0.05
    assert not during.ok and during.failed == 2 and during.first_failed_at == 13.0
    assert during.reason.startswith("success 87.5% < 99% (2 of 16 failed, first: HTTP 502)")
    assert not after.ok and after.reason.startswith("p99 400ms > 300ms")  # 20-25 (recovering) judged nowhere
    assert effect.ok and effect.samples == 1


def test_a_judged_phase_with_no_sample_fails() -> None:
    (before, *_) = judge(HTTP, [], PHASES)
    assert not before.ok and before.reason.startswith("no sample before")


def test_a_polled_probe_fails_a_phase_on_its_first_failed_sample() -> None:
    k8s = Probe.model_validate(
        {
            "name": "ready",
            "k8s": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "prices",
                "namespace": "shop",
                "condition": "Available",
            },
            "when": ["during"],
        }
    )
    samples = [ProbeSample(12, True), ProbeSample(14, False, None, "Available is False"), ProbeSample(16, True)]
    (during,) = judge(k8s, samples, PHASES)
    assert not during.ok and during.reason == "1 of 3 samples failed, first: Available is False"


def test_a_probe_in_words_says_what_is_asked_how_often_what_must_hold_and_when() -> None:
    from chaoskit.model.probes import probe_words

    assert probe_words(HTTP) == (
        "shop: GET http://shop/ (timeout 2s) every 1s; success >= 99%, p99 <= 300ms; "
        "judged before, during, after, effect"
    )
    promql = Probe.model_validate({"name": "up", "promql": {"query": "sum(up)", "min": 3}, "when": ["effect"]})
    assert probe_words(promql) == "up: PromQL sum(up) every 1s; >= 3; judged effect"


def test_the_effect_phase_judges_success_and_max_not_a_percentile_of_one_request() -> None:
    slo = Probe.model_validate(
        {"name": "shop", "http": {"url": "http://shop/"}, "when": ["effect"], "slo": {"successRate": 99, "p50": 0.2}}
    )
    (effect,) = judge(slo, [ProbeSample(12.5, True, 0.3)], PHASES)  # a host stall at the fault's start
    assert effect.ok and effect.latency["p50"] == 0.3
    bounded = slo.model_copy(update={"slo": slo.slo.model_copy(update={"max": 0.25})})  # type: ignore[union-attr]
    (effect,) = judge(bounded, [ProbeSample(12.5, True, 0.3)], PHASES)
    assert not effect.ok and effect.reason.startswith("max 300ms > 250ms")
    (effect,) = judge(slo, [ProbeSample(12.5, False, None, "HTTP 502")], PHASES)
    assert not effect.ok and effect.reason.startswith("success 0.0% < 99%")
