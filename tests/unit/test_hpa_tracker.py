"""The HPA-to-Ready tracker, fed by hand with what the watches, the metrics poll and the probes would see."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from chaoskit.cli.measure import print_stages
from chaoskit.measurements.hpa_scale_up import cpu_cores
from chaoskit.measurements.hpa_tracker import HpaTracker
from chaoskit.measurements.probe import AnswerSeen, RoundSeen, RulesSeen, parse_line, probe_script
from chaoskit.model.timeline import HPA_STAGES, RUN_SUBJECT, MeasurementResult, Sample, Stamp

T0 = 1_000_000_000.0  # 2001-09-09T01:46:40Z
NODES = ["cp", "w1"]
NOW = T0 + 3600.0  # the tracker's injected clock: an hour on, so a stamp taken from it stands out


def clock() -> float:
    return NOW


def hpa(min_replicas: int = 1, desired: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"name": "web"},
        "spec": {"minReplicas": min_replicas, "metrics": [{"resource": {"target": {"averageUtilization": 50}}}]},
        "status": {"desiredReplicas": desired},
    }


def deployment(replicas: int) -> dict[str, Any]:
    return {"metadata": {"name": "web"}, "spec": {"replicas": replicas}}


def rs(replicas: int) -> dict[str, Any]:
    return {"metadata": {"name": "web-1"}, "spec": {"replicas": replicas}}


def pod(name: str, *, node: str = "", running: bool = False, ready: bool = False, ip: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "creationTimestamp": "2001-09-09T01:46:40Z"},
        "spec": {"nodeName": node} if node else {},
        "status": {
            "podIP": ip,
            "containerStatuses": [{"state": {"running": {}} if running else {"waiting": {}}}],
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def slice_with(name: str, ready: bool) -> dict[str, Any]:
    return {"endpoints": [{"targetRef": {"kind": "Pod", "name": name}, "conditions": {"ready": ready}}]}


def scaled_once(t: HpaTracker, at: float = T0) -> None:
    """One scale-up 1 → 2 of pod p1, every stage 1 s after the previous one."""
    t.hpa("LISTED", hpa(), at - 100)
    t.deployment("LISTED", deployment(1), at - 100)
    t.replicaset("LISTED", rs(1), at - 100)
    t.metric(at, 80.0)
    t.deployment("MODIFIED", deployment(2), at + 1)
    t.replicaset("MODIFIED", rs(2), at + 2)
    t.pod("ADDED", pod("p1"), at + 3)
    t.pod("MODIFIED", pod("p1", node="w1"), at + 4)
    t.pod("MODIFIED", pod("p1", node="w1", running=True, ip="10.0.0.9"), at + 5)
    t.pod("MODIFIED", pod("p1", node="w1", running=True, ready=True, ip="10.0.0.9"), at + 6)
    t.endpoint_slice("MODIFIED", slice_with("p1", True), at + 7)
    t.seen(RulesSeen("cp", at - 50, frozenset({"10.0.0.1"}), None, at - 49.98))
    t.seen(RulesSeen("cp", at + 8, frozenset({"10.0.0.1", "10.0.0.9"}), at + 7.88, at + 8.03))  # bracket 0.15 s
    t.seen(RulesSeen("w1", at + 8.5, frozenset({"10.0.0.9"}), at + 8.3, at + 8.52))  # bracket 0.22 s
    for node in NODES:
        for start in (at + 8.6, at + 8.75, at + 8.9, at + 9.45):  # w1's round at 8.9 hung on a gone endpoint
            t.seen(RoundSeen(node, start))
    t.seen(AnswerSeen("cp", at + 9, "p1"))
    t.seen(AnswerSeen("w1", at + 9.5, "p1"))
    t.seen(AnswerSeen("w1", at + 20, "p1"))  # only the first answer counts


def started(t: HpaTracker, name: str, ip: str, at: float) -> None:
    """Pod `name` created at `at`, scheduled, running and Ready a second apart each."""
    t.pod("ADDED", pod(name), at)
    t.pod("MODIFIED", pod(name, node="w1"), at + 1)
    t.pod("MODIFIED", pod(name, node="w1", running=True, ip=ip), at + 2)
    t.pod("MODIFIED", pod(name, node="w1", running=True, ready=True, ip=ip), at + 3)


def by_stage(t: HpaTracker) -> dict[tuple[str, str], Sample]:
    return {(s.stage, s.subject): s for s in t.samples(NODES)}


def test_every_stage_of_a_scale_up_is_timed_from_the_end_of_the_previous_one() -> None:
    t = HpaTracker(started_at=T0 - 10, clock=clock)
    scaled_once(t)
    samples = {(s.stage, s.subject): s for s in t.samples(NODES)}
    assert {stage for stage, _ in samples} == {s.name for s in HPA_STAGES}
    for stage in ("hpa_decision", "replicaset_scaled"):
        assert samples[(stage, RUN_SUBJECT)].seconds == pytest.approx(1.0)
    for stage in ("pod_created", "scheduled", "containers_started", "ready", "endpoint_ready"):
        assert samples[(stage, "p1")].seconds == pytest.approx(1.0)
    assert samples[("rules_programmed", "p1@cp")].seconds == pytest.approx(1.0)
    assert samples[("rules_programmed", "p1@w1")].seconds == pytest.approx(1.5)
    assert samples[("first_request", "p1@w1")].seconds == pytest.approx(1.0)
    assert samples[("hpa_decision", RUN_SUBJECT)].precision == 1.0  # the metric sample's own timestamp
    assert samples[("scheduled", "p1")].precision == 0.001
    assert samples[("rules_programmed", "p1@cp")].precision == pytest.approx(0.15)
    assert t.in_flight(NODES) == 0 and t.incomplete() == [] and t.clamped(NODES) == []


def test_dataplane_stages_carry_the_spacing_of_the_probe_rounds_that_bracket_their_end() -> None:
    t = HpaTracker(started_at=T0 - 10, clock=clock)
    scaled_once(t)
    samples = by_stage(t)
    # the rules: from the read without the IP to the end of the read with it
    assert samples[("rules_programmed", "p1@w1")].precision == pytest.approx(0.22)
    # the first answer: from the start of the round before its own; no finer than the rules end it starts from
    assert samples[("first_request", "p1@cp")].precision == pytest.approx(9 - 8.75)
    assert samples[("first_request", "p1@w1")].precision == pytest.approx(9.5 - 8.9)
    # the pod's end-to-end figure is as coarse as its coarsest stage (a metric sample's own 1 s timestamp here)
    result = MeasurementResult("hpa", "hpa_scale_up", T0, samples=t.samples(NODES))
    assert [s.precision for s in result.totals()] == [1.0]
    first = result.summaries()["first_request"]
    assert (first.precision_median, first.precision) == (pytest.approx(0.25), pytest.approx(0.6))


def test_an_ip_reused_from_an_earlier_pod_still_in_the_rules_reads_0_and_says_so() -> None:
    t = HpaTracker(started_at=T0 - 10, clock=clock)
    scaled_once(t)
    t.deployment("MODIFIED", deployment(3), T0 + 29.5)
    started(t, "p2", "10.0.0.1", T0 + 30)
    t.endpoint_slice("MODIFIED", slice_with("p2", True), T0 + 34)
    samples = by_stage(t)
    assert samples[("rules_programmed", "p2@cp")].seconds == 0.0  # 10.0.0.1 is in cp's rules since T0 - 50
    assert ("rules_programmed", "p2@w1") not in samples  # w1 never showed 10.0.0.1: not programmed there yet
    (note,) = t.clamped(NODES)
    assert note.startswith("rules_programmed of p2@cp (run 2) reported as 0: IP 10.0.0.1 reused: the node's rules")


def test_an_ip_that_left_the_rules_and_came_back_for_a_new_pod_is_timed_from_its_return() -> None:
    t = HpaTracker(started_at=T0 - 10, clock=clock)
    scaled_once(t)
    t.seen(RulesSeen("cp", T0 + 25, frozenset({"10.0.0.9"}), T0 + 24.9, T0 + 25.02))  # 10.0.0.1 dropped
    t.deployment("MODIFIED", deployment(3), T0 + 29.5)
    started(t, "p2", "10.0.0.1", T0 + 30)
    t.endpoint_slice("MODIFIED", slice_with("p2", True), T0 + 34)
    t.seen(RulesSeen("cp", T0 + 34.6, frozenset({"10.0.0.1", "10.0.0.9"}), T0 + 34.45, T0 + 34.63))
    assert by_stage(t)[("rules_programmed", "p2@cp")].seconds == pytest.approx(0.6)
    assert t.clamped(NODES) == []


def test_an_answer_before_the_rules_read_that_showed_the_ip_reads_0_and_says_so() -> None:
    t = HpaTracker(started_at=T0 - 10, clock=clock)
    scaled_once(t)
    t.deployment("MODIFIED", deployment(3), T0 + 29.5)
    started(t, "p3", "10.0.0.3", T0 + 30)
    t.endpoint_slice("MODIFIED", slice_with("p3", True), T0 + 34)
    t.seen(RoundSeen("w1", T0 + 34.5))
    t.seen(AnswerSeen("w1", T0 + 34.52, "p3"))  # the rules changed after the read at 34.4 started
    t.seen(RulesSeen("w1", T0 + 34.55, frozenset({"10.0.0.3", "10.0.0.9"}), T0 + 34.4, T0 + 34.57))
    samples = by_stage(t)
    assert samples[("rules_programmed", "p3@w1")].seconds == pytest.approx(0.55)
    assert samples[("first_request", "p3@w1")].seconds == 0.0
    assert t.clamped(NODES) == [
        "first_request of p3@w1 (run 2) reported as 0: it answered 0.03s before the rules read that first showed its IP"
    ]


def test_a_raised_min_replicas_triggers_the_decision_even_when_the_metric_is_below_target() -> None:
    t = HpaTracker(started_at=T0 - 10, clock=clock)
    t.hpa("LISTED", hpa(), T0 - 100)
    t.deployment("LISTED", deployment(1), T0 - 100)
    t.hpa("MODIFIED", hpa(min_replicas=3), T0)
    t.metric(T0 + 0.5, 10.0)  # below target: must not erase the forced trigger
    t.deployment("MODIFIED", deployment(3), T0 + 0.2)
    [decision] = [s for s in t.samples(NODES) if s.stage == "hpa_decision"]
    assert decision.seconds == pytest.approx(0.2) and decision.precision == 0.001


@pytest.mark.parametrize(("sampled", "trigger"), [(-8.0, -8.0), (+1.0, None), (-40.0, None)])
def test_a_sample_read_after_the_hpa_acted_on_it_is_its_trigger(sampled: float, trigger: float | None) -> None:
    """Our poll reads the metrics API every 2 s and the HPA may act first: a sample above target read just after
    the decision, taken before it, is what the HPA acted on; one taken after it, or long before, is not."""
    t = HpaTracker(started_at=T0 - 100, clock=clock)
    t.hpa("LISTED", hpa(), T0 - 100)
    t.deployment("LISTED", deployment(1), T0 - 100)
    t.deployment("MODIFIED", deployment(3), T0)
    t.metric(T0 + sampled, 90.0)
    assert t.scale_ups[0].trigger == (None if trigger is None else Stamp(T0 + trigger, 1.0))
    decisions = [s for s in t.samples(NODES) if s.stage == "hpa_decision"]
    assert [d.seconds for d in decisions] == ([] if trigger is None else [pytest.approx(-trigger)])


def test_a_raised_min_replicas_not_yet_acted_on_is_in_flight_until_the_hpa_acts() -> None:
    t = HpaTracker(started_at=T0 - 10, clock=clock)
    t.hpa("LISTED", hpa(min_replicas=2), T0 - 100)
    t.deployment("LISTED", deployment(2), T0 - 100)
    t.hpa("MODIFIED", hpa(min_replicas=2), T0 - 50)
    assert t.in_flight(NODES) == 0  # nothing asked
    t.hpa("MODIFIED", hpa(min_replicas=4), T0)
    assert t.in_flight(NODES) == 1  # asked, and the HPA has not raised the Deployment yet
    t.deployment("MODIFIED", deployment(4), T0 + 20)
    assert t.in_flight(NODES) == 2  # acted on: its two pods are on their way, not created yet (a quota refuses them)
    t.hpa("LISTED", hpa(min_replicas=5), T0 + 40)  # raised during a watch gap: seen in the re-list only
    assert t.in_flight(NODES) == 3


def test_a_pod_whose_event_overtook_the_scale_write_belongs_to_that_scale_up() -> None:
    """A StatefulSet creates its pods itself: their watch may deliver the pod seconds before the scale write."""
    t = HpaTracker(started_at=T0 - 100, clock=clock)
    t.hpa("LISTED", hpa(), T0 - 100)
    t.deployment("LISTED", deployment(1), T0 - 100)
    t.pod("ADDED", pod("old"), T0 - 60)  # replaced a minute before: no scale-up's
    t.pod("ADDED", pod("ledger-1"), T0 - 2.5)
    t.deployment("MODIFIED", deployment(2), T0)
    assert (t.pods["ledger-1"].run, t.pods["old"].run) == (1, 0)


def test_a_replicaset_event_overtaking_the_deployments_is_kept() -> None:
    t = HpaTracker(started_at=T0 - 10, clock=clock)
    t.deployment("LISTED", deployment(1), T0 - 100)
    t.replicaset("LISTED", rs(1), T0 - 100)
    t.replicaset("MODIFIED", rs(2), T0 + 0.010)
    t.deployment("MODIFIED", deployment(2), T0 + 0.012)
    assert t.scale_ups[0].rs_scaled is not None
    [rs_stage] = [s for s in t.samples(NODES) if s.stage == "replicaset_scaled"]
    assert rs_stage.seconds == 0.0  # never negative...
    assert t.clamped(NODES) == [  # ...and never silently 0
        f"replicaset_scaled of {RUN_SUBJECT} (run 1) reported as 0: its end was seen 0.002s before its start "
        "(observations out of order)"
    ]


def test_pods_there_before_the_measurement_and_pods_not_from_a_scale_up_are_left_out() -> None:
    t = HpaTracker(started_at=T0 + 60, clock=clock)
    t.deployment("LISTED", deployment(1), T0 + 60)
    t.pod("LISTED", pod("old", node="w1", running=True, ready=True), T0 + 60)  # created a minute before
    t.pod("ADDED", pod("replacement"), T0 + 61)  # a deleted pod replaced: no scale-up behind it
    assert "old" in t.known_pods
    assert t.pods["replacement"].run == 0
    assert t.samples(NODES) == []


def test_a_pod_that_never_got_ready_is_reported_not_timed() -> None:
    t = HpaTracker(started_at=T0 - 10, clock=clock)
    t.deployment("LISTED", deployment(1), T0 - 100)
    t.deployment("MODIFIED", deployment(2), T0)
    t.pod("ADDED", pod("stuck"), T0 + 1)
    assert [s.stage for s in t.samples(NODES) if s.subject == "stuck"] == ["pod_created"]
    assert t.in_flight(NODES) == 1
    assert any("stuck" in line and "Ready" in line for line in t.incomplete())


def test_after_a_watch_gap_the_objects_own_timestamps_are_used_at_1s_precision() -> None:
    t = HpaTracker(started_at=T0 - 10, clock=clock)
    t.deployment("LISTED", deployment(1), T0 - 100)
    t.deployment("MODIFIED", deployment(2), T0)
    listed = pod("p1", node="w1")
    listed["metadata"]["creationTimestamp"] = "2001-09-09T01:46:41Z"  # T0 + 1
    listed["status"]["conditions"].append(
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2001-09-09T01:46:42Z"}
    )
    t.pod("LISTED", listed, T0 + 30)  # re-listed once the API server came back
    p = t.pods["p1"]
    assert p.created.at == T0 + 1 and p.created.precision == 1.0
    assert p.scheduled is not None and p.scheduled.at == T0 + 2 and p.scheduled.precision == 1.0


def test_a_condition_without_its_own_time_is_stamped_by_the_injected_clock() -> None:
    t = HpaTracker(started_at=T0 - 10, clock=clock)
    t.deployment("LISTED", deployment(1), T0 - 100)
    t.deployment("MODIFIED", deployment(2), T0)
    t.pod("LISTED", pod("p1", node="w1", running=True, ready=True), T0 + 30)  # Ready carries no lastTransitionTime
    ready = t.pods["p1"].ready
    assert ready is not None and ready.at == NOW and ready.precision == 1.0


def test_cpu_quantities() -> None:
    assert cpu_cores("250m") == 0.25 and cpu_cores("1") == 1.0
    assert cpu_cores("1500000n") == pytest.approx(0.0015) and cpu_cores("10u") == pytest.approx(0.00001)


def test_probe_lines_are_parsed_and_garbage_is_ignored() -> None:
    assert parse_line("w1", "R 12.5 12.53 12.35 10.0.0.1 10.0.0.2\n") == RulesSeen(
        "w1", 12.5, frozenset({"10.0.0.1", "10.0.0.2"}), since=12.35, until=12.53
    )
    assert parse_line("w1", "R 12.5 12.51 - \n") == RulesSeen("w1", 12.5, frozenset(), since=None, until=12.51)
    assert parse_line("w1", "A 13.0 web-abc\n") == AnswerSeen("w1", 13.0, "web-abc")
    assert parse_line("w1", "Q 13.2\n") == RoundSeen("w1", 13.2)
    for junk in ("", "A 13.0", "X 1 y", "R notatime 1.2.3.4", "R 12.5 10.0.0.1", "R 12.5 12.6 10.0.0.1 10.0.0.2"):
        assert parse_line("w1", junk) is None


def test_the_probe_reads_both_modes_and_asks_the_service() -> None:
    script = probe_script("ns", "web", "10.96.0.7", 80)
    assert "iptables -t nat -S KUBE-SVC-" in script and "nft list chain ip kube-proxy service-" in script
    assert "/dev/tcp/10.96.0.7/80" in script and "ns/web" in script


def test_the_probe_brackets_each_rules_change_and_stamps_each_request_round() -> None:
    script = probe_script("ns", "web", "10.96.0.7", 80)
    rules_loop, requests_loop = script.split("done ) & (", 1)
    # the read is stamped before and after; the previous read's start rides along with a change
    assert rules_loop.index("t=$EPOCHREALTIME") < rules_loop.index("iptables -t nat -S") < rules_loop.index("u=$EPOCH")
    assert 'echo "R $t $u $p $ips"' in rules_loop and "p=$t; pace; nap $P" in rules_loop
    assert requests_loop.startswith(' while :; do q=$EPOCHREALTIME; echo "Q $q";')


def test_the_hpa_table_states_each_stage_s_precision_one_clock_or_typical_and_worst() -> None:
    t = HpaTracker(started_at=T0 - 10, clock=clock)
    scaled_once(t)
    out = io.StringIO()
    print_stages(MeasurementResult("hpa", "hpa_scale_up", T0, samples=t.samples(NODES)), Console(file=out, width=200))
    # in a pipe (as here) plain columns: the stage is each row's first word
    rows = {line.split()[0]: line for line in out.getvalue().splitlines() if line.strip()}
    assert "±0.001s" in rows["scheduled"] and "±1s" in rows["hpa_decision"]
    assert "±0.25s (max 0.6s)" in rows["first_request"]


def test_a_stage_whose_start_and_end_one_watch_event_showed_reads_0_and_says_so() -> None:
    t = HpaTracker(started_at=T0 - 10, clock=clock)
    t.deployment("LISTED", deployment(1), T0 - 100)
    t.deployment("MODIFIED", deployment(2), T0)
    t.pod("ADDED", pod("p1"), T0 + 1)
    t.pod("MODIFIED", pod("p1", node="w1"), T0 + 2)
    t.pod("MODIFIED", pod("p1", node="w1", running=True, ready=True, ip="10.0.0.9"), T0 + 3)  # one status update
    assert by_stage(t)[("ready", "p1")].seconds == 0.0
    assert t.clamped(NODES) == [
        "ready of p1 (run 1) reported as 0: its start and end carry one timestamp (one watch event showed both)"
    ]


def test_without_answers_that_name_the_pod_a_pods_path_ends_when_every_nodes_rules_hold_it() -> None:
    t = HpaTracker(started_at=T0 - 10, clock=clock, answers_name_the_pod=False)
    scaled_once(t)  # its answers are fed too: a user's Service answers, just not with the pod's name
    t.answers.clear()
    assert t.in_flight(NODES) == 0  # in every node's rules: nothing left to wait for
    assert not any(s.stage == "first_request" for s in t.samples(NODES))
    t.rules.pop("w1")
    assert t.in_flight(NODES) == 1
