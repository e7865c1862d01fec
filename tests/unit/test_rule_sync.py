"""The rule-sync measurement's pure side: endpoint changes found in EndpointSlice events, per node the time the rules
held them and the time traffic followed, kube-proxy's SLI beside ours; fed with recorded and hand-made inputs."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from chaoskit.cli.measure_rule_sync import print_result
from chaoskit.env import Env
from chaoskit.errors import UsageError
from chaoskit.measurements.probe import (
    FAILED,
    INTERVAL,
    AnswerSeen,
    Rounds,
    RoundSeen,
    RulesSeen,
    parse_line,
    probe_script,
)
from chaoskit.measurements.rule_sync import MissingPiece, RuleSync, RuleSyncParams, rounds_note
from chaoskit.measurements.rule_sync_driver import Workload, initial_replicas, parse_changes
from chaoskit.measurements.rule_sync_sli import (
    SliSnapshot,
    compare_sli,
    scrape_sli,
    sli_delta,
    sli_snapshot,
)
from chaoskit.measurements.rule_sync_tracker import (
    RuleSyncTracker,
    SliceView,
    programmed_set,
    slice_view,
)
from chaoskit.model.timeline import MAX_CLAMP_NOTES, Clamp, MeasurementResult, Sample, clamp_notes
from chaoskit.registry import MEASUREMENTS, load_catalog
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.seams.scrape import parse
from chaoskit.seams.shell import FakeRunner

DATA = Path(__file__).parent / "data"
RECORDED = DATA / "rule_sync" / "iptables-baseline.jsonl"
KUBE_PROXY_METRICS = (DATA / "metrics" / "kube-proxy.txt").read_text()
TRIGGER = "endpoints.kubernetes.io/last-change-trigger-time"
NODES = ["cp", "w1", "w2"]


def ep(ip: str, pod: str, ready: bool = True, terminating: bool = False) -> dict[str, Any]:
    return {
        "addresses": [ip],
        "targetRef": {"name": pod},
        "conditions": {"ready": ready, "serving": ready or terminating, "terminating": terminating},
    }


def eps(*endpoints: dict[str, Any], trigger: str | None = None, name: str = "web-abc") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if trigger:
        meta["annotations"] = {TRIGGER: trigger}
    return {"addressType": "IPv4", "metadata": meta, "endpoints": list(endpoints)}


A, B, C, D = ep("10.0.0.1", "a"), ep("10.0.0.2", "b"), ep("10.0.0.3", "c"), ep("10.0.0.4", "d")
AB = frozenset({"10.0.0.1", "10.0.0.2"})
ABC = AB | {"10.0.0.3"}


READ = 0.02  # how long a hand-made rules read takes
SINCE = 0.12  # how long before a hand-made rules read the previous one started


def tracker_with_rules(nodes: list[str] = NODES, at: float = 1.0, ips: frozenset[str] = AB) -> RuleSyncTracker:
    t = RuleSyncTracker(started_at=0.0)
    t.endpoint_slice("LISTED", eps(A, B), 0.5)
    for n in nodes:
        t.seen(RulesSeen(n, at, ips, None, at + READ))  # the probe's first read
    return t


def rules(t: RuleSyncTracker, node: str, at: float, ips: frozenset[str], since: float | None = None) -> None:
    t.seen(RulesSeen(node, at, ips, at - SINCE if since is None else since, at + READ))


def answer(t: RuleSyncTracker, node: str, at: float, pod: str = FAILED) -> None:
    t.seen(AnswerSeen(node, at, pod))


def rounds(t: RuleSyncTracker, node: str, *starts: float) -> None:
    for at in starts:
        t.seen(RoundSeen(node, at))


def sample(t: RuleSyncTracker, name: str, subject: str) -> Sample:
    found = [s for s in t.samples(NODES) if s.stage == name and s.subject == subject]
    assert len(found) == 1, (name, subject, found)
    return found[0]


def stage(t: RuleSyncTracker, name: str, subject: str) -> float:
    return sample(t, name, subject).seconds


# --- what kube-proxy programs --------------------------------------------------------------------------------------


def test_ready_endpoints_are_programmed_and_unset_ready_counts_as_ready() -> None:
    unset = {"addresses": ["10.0.0.9"], "conditions": {}}
    view = slice_view(eps(A, ep("10.0.0.2", "b", ready=False), unset, trigger="2026-11-30T04:00:09Z"))
    assert view is not None
    assert view.ready == {"10.0.0.1", "10.0.0.9"}
    assert view.trigger == 1796011209.0
    assert dict(view.pods) == {"10.0.0.1": "a", "10.0.0.2": "b"}


def test_serving_terminating_endpoints_are_programmed_only_when_none_is_ready() -> None:
    terminating = slice_view(eps(ep("10.0.0.1", "a", ready=False, terminating=True)))
    ready = slice_view(eps(B, name="other"))
    assert terminating is not None and ready is not None
    assert programmed_set([terminating]) == {"10.0.0.1"}
    assert programmed_set([terminating, ready]) == {"10.0.0.2"}


def test_an_ipv6_slice_is_not_read_by_the_ipv4_rules_probe() -> None:
    assert slice_view({**eps(A), "addressType": "IPv6"}) is None


# --- changes -------------------------------------------------------------------------------------------------------


def test_the_first_listing_is_the_state_before_measuring_not_a_change() -> None:
    t = tracker_with_rules()
    assert t.changes == [] and t.current == AB


def test_a_not_ready_endpoint_is_no_change_its_readiness_is() -> None:
    t = tracker_with_rules()
    t.endpoint_slice("MODIFIED", eps(A, B, ep("10.0.0.3", "c", ready=False)), 5.0)
    assert t.changes == []
    t.endpoint_slice("MODIFIED", eps(A, B, C, trigger="2026-11-30T04:00:09Z"), 6.0)
    (change,) = t.changes
    assert (change.number, change.at, change.removed) == (1, 6.0, frozenset())
    assert change.added == {"10.0.0.3"} and change.added_pods == {"c"}
    assert change.trigger == 1796011209.0


def test_a_change_seen_only_in_a_relist_after_a_gap_is_kept_but_not_timed() -> None:
    t = tracker_with_rules()
    t.endpoint_slice("MODIFIED", eps(A, B, ep("10.0.0.3", "c", ready=False)), 5.0)
    t.endpoint_slice("LISTED", eps(A, B, C), 30.0)
    assert [c.late for c in t.changes] == [True]
    rules(t, "w1", 31.0, ABC)
    assert t.samples(NODES) == []
    assert t.incomplete(NODES) == ["change 1 was seen only after a watch gap (re-list): not timed"]
    assert t.converged(NODES)


# --- rules_programmed ----------------------------------------------------------------------------------------------


def test_rules_programmed_ends_when_the_node_rules_hold_exactly_the_new_set() -> None:
    t = tracker_with_rules()
    t.endpoint_slice("MODIFIED", eps(A, B, C), 10.0)
    rules(t, "w1", 10.4, ABC)
    rules(t, "w2", 10.9, ABC)
    assert t.rules_programmed(t.changes[0], "w1") == 10.4
    assert stage(t, "rules_programmed", "1@w2") == pytest.approx(0.9)
    assert t.rules_programmed(t.changes[0], "cp") is None
    assert not t.converged(NODES)
    assert "change 1 on cp: the rules never held the new endpoints while measured" in t.incomplete(NODES)


def test_rules_already_programmed_when_our_watch_saw_the_change_take_zero() -> None:
    t = tracker_with_rules()
    rules(t, "w1", 9.98, ABC)  # kube-proxy's watch was a few ms ahead of ours
    t.endpoint_slice("MODIFIED", eps(A, B, C), 10.0)
    assert t.rules_programmed(t.changes[0], "w1") == 10.0


def test_a_change_superseded_before_the_node_synced_is_programmed_with_the_next() -> None:
    t = tracker_with_rules()
    t.endpoint_slice("MODIFIED", eps(A, B, C), 10.0)
    t.endpoint_slice("MODIFIED", eps(A, B, C, D), 10.3)
    rules(t, "w1", 10.8, ABC | {"10.0.0.4"})
    first, second = t.changes
    assert t.rules_programmed(first, "w1") == t.rules_programmed(second, "w1") == 10.8


def test_rules_that_undo_a_change_do_not_count_as_programming_it() -> None:
    t = tracker_with_rules()
    t.endpoint_slice("MODIFIED", eps(A, B, C), 10.0)  # c added...
    t.endpoint_slice("MODIFIED", eps(A, B), 10.2)  # ...and gone again before w1 synced
    rules(t, "w1", 10.5, AB)
    added, removed = t.changes
    assert t.rules_programmed(added, "w1") is None
    assert t.rules_programmed(removed, "w1") == 10.2  # w1 never held c: already right when c went


# --- traffic_follows -----------------------------------------------------------------------------------------------


def test_traffic_follows_an_added_endpoint_at_the_first_answer_from_its_pod() -> None:
    t = tracker_with_rules()
    t.endpoint_slice("MODIFIED", eps(A, B, C), 10.0)
    rules(t, "w1", 10.4, ABC)
    rounds(t, "w1", 10.3, 10.49, 10.64, 10.79)
    answer(t, "w1", 10.5, "a")
    answer(t, "w1", 10.65, "c")
    answer(t, "w1", 10.8, "c")
    assert stage(t, "traffic_follows", "1@w1") == pytest.approx(0.65)
    # from the start of the round before (which got no answer from c) to c's first answer
    assert sample(t, "traffic_follows", "1@w1").precision == pytest.approx(10.65 - 10.49)


def test_traffic_follows_a_removal_one_round_after_the_last_request_that_reached_the_removed_pod() -> None:
    t = tracker_with_rules(ips=ABC)
    t.endpoint_slice("LISTED", eps(A, B, C), 0.5)
    t.endpoint_slice("MODIFIED", eps(A, B, ep("10.0.0.3", "c", ready=False, terminating=True)), 10.0)
    rounds(t, "w1", 10.05, 10.25, 10.4)
    answer(t, "w1", 10.1, "c")  # still DNATed to c, which still answers
    answer(t, "w1", 10.3, "c")
    answer(t, "w1", 10.31, "a")  # same round as c's last answer
    rules(t, "w1", 10.35, AB)
    answer(t, "w1", 10.45, "b")
    assert stage(t, "rules_programmed", "1@w1") == pytest.approx(0.35)
    assert stage(t, "traffic_follows", "1@w1") == pytest.approx(0.45)
    # from the start of the last round that reached c to the first answer of the round after it
    assert sample(t, "traffic_follows", "1@w1").precision == pytest.approx(10.45 - 10.25)


def test_refused_requests_while_the_rules_still_hold_the_removed_pod_count_as_traffic_to_it() -> None:
    t = tracker_with_rules(ips=ABC)
    t.endpoint_slice("LISTED", eps(A, B, C), 0.5)
    t.endpoint_slice("MODIFIED", eps(A, B, ep("10.0.0.3", "c", ready=False, terminating=True)), 10.0)
    rounds(t, "w1", 10.49, 11.89, 12.04)  # a request to c hangs until curl's timeout: rounds 1.4 s apart
    answer(t, "w1", 10.5)  # c stopped listening at SIGTERM: refused
    answer(t, "w1", 11.9)
    answer(t, "w1", 11.91, "a")
    rules(t, "w1", 12.0, AB)
    answer(t, "w1", 12.05)  # fails for another reason after the rules dropped c: not c's traffic
    answer(t, "w1", 12.1, "b")
    assert stage(t, "traffic_follows", "1@w1") == pytest.approx(2.1)
    assert sample(t, "traffic_follows", "1@w1").precision == pytest.approx(12.1 - 11.89)


def test_a_removal_is_not_followed_while_the_rules_still_hold_the_removed_pod() -> None:
    t = tracker_with_rules(ips=ABC)
    t.endpoint_slice("LISTED", eps(A, B, C), 0.5)
    t.endpoint_slice("MODIFIED", eps(A, B), 10.0)
    answer(t, "w1", 10.2, "a")
    assert t.traffic_follows(t.changes[0], "w1") is None
    assert "change 1 on w1: the rules never held the new endpoints while measured" in t.incomplete(NODES)


def test_answers_from_a_pod_before_the_previous_change_do_not_count_for_its_return() -> None:
    t = tracker_with_rules()
    rounds(t, "w1", 1.9, 10.25)
    answer(t, "w1", 2.0, "a")
    t.endpoint_slice("MODIFIED", eps(B), 10.0)
    rules(t, "w1", 10.2, frozenset({"10.0.0.2"}))
    answer(t, "w1", 10.3, "b")
    t.endpoint_slice("MODIFIED", eps(A, B), 20.0)
    rules(t, "w1", 20.2, AB)
    assert t.traffic_follows(t.changes[1], "w1") is None  # a's answer at 2.0 predates its removal
    answer(t, "w1", 20.4, "a")
    assert t.traffic_follows(t.changes[1], "w1") == 20.4


def test_samples_are_per_change_and_node_each_with_the_precision_measured_for_it() -> None:
    t = tracker_with_rules()
    t.endpoint_slice("MODIFIED", eps(A, B, C), 10.0)
    for i, n in enumerate(NODES):
        rules(t, n, 10.4, ABC, since=10.4 - 0.1 * (i + 1))  # the previous read: 0.1, 0.2, 0.3 s before
        rounds(t, n, 10.3 - i, 10.45)  # the round before c's answer: 0.2, 1.2, 2.2 s before it
        answer(t, n, 10.5, "c")
    samples = t.samples(NODES)
    assert {(s.stage, s.subject, s.run) for s in samples} == {
        (st, f"1@{n}", 1) for st in ("rules_programmed", "traffic_follows") for n in NODES
    }
    precision = {(s.stage, s.subject): round(s.precision, 3) for s in samples}
    assert [precision[("rules_programmed", f"1@{n}")] for n in NODES] == [0.12, 0.22, 0.32]  # + the read itself
    assert [precision[("traffic_follows", f"1@{n}")] for n in NODES] == [0.2, 1.2, 2.2]
    assert {s.component for s in samples} == {"kube-proxy"}
    assert t.converged(NODES) and t.clamped(NODES) == []


def test_a_rules_read_brackets_a_change_from_the_read_before_it_to_its_own_end() -> None:
    seen = RulesSeen("w1", 10.0, ABC, since=9.85, until=10.04)
    assert seen.precision == pytest.approx(0.19)
    assert RulesSeen("w1", 10.0, ABC, since=None, until=10.04).precision == pytest.approx(0.04)  # first read: itself


def test_rules_already_holding_the_change_before_our_watch_saw_it_read_0_and_say_so() -> None:
    t = tracker_with_rules()
    rules(t, "w1", 9.98, ABC)  # kube-proxy's watch was a few ms ahead of ours
    t.endpoint_slice("MODIFIED", eps(A, B, C), 10.0)
    for n in ("cp", "w2"):
        rules(t, n, 10.3, ABC)
    assert stage(t, "rules_programmed", "1@w1") == 0.0
    assert sample(t, "rules_programmed", "1@w1").precision == pytest.approx(SINCE + READ)
    (note,) = t.clamped(NODES)
    assert note == (
        "rules_programmed of 1@w1 (run 1) reported as 0: the node's rules already held it for 0.02s when "
        "our watch saw the change"
    )


def test_an_added_pod_answering_before_our_watch_saw_the_change_reads_0_and_says_so() -> None:
    t = tracker_with_rules(["w1"])
    rounds(t, "w1", 9.8, 9.95)
    answer(t, "w1", 9.96, "c")
    t.endpoint_slice("MODIFIED", eps(A, B, C), 10.0)
    rules(t, "w1", 9.97, ABC)
    assert t.traffic_follows(t.changes[0], "w1") == 10.0
    assert any(
        "traffic_follows of 1@w1 (run 1) reported as 0: an added pod answered 0.04s before" in n
        for n in t.clamped(["w1"])
    )


def test_probe_rounds_are_the_spacing_of_every_request_round_and_of_the_rules_reads_around_each_change() -> None:
    t = tracker_with_rules(["w1"])
    rounds(t, "w1", 1.0, 1.15, 1.3, 2.4)  # the third round hung on a gone endpoint
    rules(t, "w1", 2.0, ABC, since=1.85)
    assert t.probe_rounds() == {
        "w1": {
            "requests": {"count": 3, "median": pytest.approx(0.15), "max": pytest.approx(1.1)},
            "rules": {"count": 1, "median": pytest.approx(0.17), "max": pytest.approx(0.17)},
        }
    }
    note = rounds_note("w1", t.probe_rounds()["w1"])
    assert note == (
        "probe on w1: request rounds median 0.15s, max 1.1s apart; rules reads bracketing a change "
        "median 0.17s, max 0.17s wide (nominal 0.1s)"
    )


# --- recorded on the real cluster ------------------------------------------------------------------------------------


def replay(path: Path) -> RuleSyncTracker:
    records = [json.loads(line) for line in path.read_text().splitlines()][1:]
    first = min(r["at"] for r in records if "slice" in r)
    t = RuleSyncTracker(started_at=first - 1)
    for r in records:
        if "slice" in r:
            t.endpoint_slice(r["slice"], r["obj"], r["at"])
        else:
            seen = parse_line(r["node"], r["line"])
            assert seen is not None
            t.seen(seen)
    return t


RECORDED_NODES = ["chaoskit-control-plane", "chaoskit-worker", "chaoskit-worker2"]


def test_recorded_scale_up_scale_down_and_pod_deletion_converge_on_every_node() -> None:
    t = replay(RECORDED)
    scaled_up, scaled_down, deleted, replaced = t.changes
    assert len(scaled_up.added_pods) == 1 and not scaled_up.removed
    assert scaled_down.removed_pods == scaled_up.added_pods and not scaled_down.added  # the newest pod goes first
    assert len(deleted.removed_pods) == 1 and not deleted.added
    assert len(replaced.added_pods) == 1 and not replaced.removed
    assert [c.trigger is not None for c in t.changes] == [True, False, False, True]  # a removal carries none
    assert t.converged(RECORDED_NODES) and t.clamped(RECORDED_NODES) == []
    samples = t.samples(RECORDED_NODES)
    assert len(samples) == 4 * 3 * 2
    assert all(0 < s.seconds < 2.0 for s in samples)
    # the scale-up's ready endpoint waited for kube-proxy's minSyncPeriod (1 s) after the not-ready one's sync
    scale_up = [s.seconds for s in samples if s.stage == "rules_programmed" and s.run == 1]
    assert all(0.8 < x < 1.5 for x in scale_up)


def test_recorded_samples_carry_the_brackets_the_probe_measured_not_its_nominal_interval() -> None:
    t = replay(RECORDED)
    samples = t.samples(RECORDED_NODES)
    for s in samples:
        node = s.subject.split("@", 1)[1]
        if s.stage == "rules_programmed":  # the read that first showed the change, from the one before it
            (read,) = [o for o in t.rules[node] if o.at == s.end]
            assert read.since is not None and s.precision == read.until - read.since
            assert INTERVAL < s.precision < 0.5
        else:  # from the round that last saw the old traffic: one round (~0.2 s), more when a request hung (1 s)
            assert INTERVAL < s.precision < 1.5
    traffic = sorted(round(s.precision, 2) for s in samples if s.stage == "traffic_follows")
    assert traffic[0] < 0.3 and traffic[-1] > 1.0, traffic  # a removed pod's hung request widened the bracket
    assert len({s.precision for s in samples}) == len(samples)  # measured one by one


def test_recorded_probe_rounds_are_reported_as_they_really_were() -> None:
    rounds = replay(RECORDED).probe_rounds()
    assert set(rounds) == set(RECORDED_NODES)
    assert all(INTERVAL < r["requests"]["median"] < 0.3 for r in rounds.values())
    assert max(r["requests"]["max"] for r in rounds.values()) > 1.0  # a round that waited out curl's 1 s timeout
    assert all(r["rules"]["count"] == 4 and INTERVAL < r["rules"]["median"] < 0.4 for r in rounds.values())


# --- kube-proxy's SLI ------------------------------------------------------------------------------------------------


def test_sli_snapshot_reads_the_histogram_and_the_ipv4_sync_timestamps() -> None:
    snap = sli_snapshot("w1", 1796010400.0, parse(KUBE_PROXY_METRICS))
    assert snap.count == 1 and snap.sum == pytest.approx(0.857026886)
    assert snap.last_queued == pytest.approx(1796010399.8142025)
    assert snap.last_sync == pytest.approx(1796010399.8570695)
    assert snap.waiting == 0.0


def test_a_change_queued_after_the_last_sync_is_reported_as_waiting() -> None:
    snap = SliSnapshot("w1", at=110.0, count=0, sum=0, last_queued=100.0, last_sync=90.0)
    assert snap.waiting == 10.0


def test_sli_is_scraped_inside_the_node_and_a_silent_kube_proxy_is_an_error_not_a_zero() -> None:
    nodes = FakeNodeExec(FakeRunner(responses={("w1", "curl"): KUBE_PROXY_METRICS}, failures={("w2", "curl"): "t/o"}))
    assert scrape_sli(nodes, Node("w1", "worker"), 1.0).count == 1
    assert ("w1", "curl") == nodes.calls[0][:2] and nodes.calls[0][-1] == "http://127.0.0.1:10249/metrics"
    frozen = scrape_sli(nodes, Node("w2", "worker"), 1.0)
    assert frozen.count is None and "w2" in frozen.error


def test_sli_delta_is_a_mean_and_a_restart_is_not_a_negative_count() -> None:
    before = SliSnapshot("w1", 0.0, count=10, sum=5.0)
    assert sli_delta(before, SliSnapshot("w1", 9.0, count=14, sum=11.0)).mean == 1.5
    assert sli_delta(before, SliSnapshot("w1", 9.0, count=10, sum=5.0)).mean is None
    assert "restarted" in sli_delta(before, SliSnapshot("w1", 9.0, count=2, sum=1.0)).error
    assert sli_delta(before, SliSnapshot("w1", 9.0, error="refused")).error == "refused"


def test_ours_from_the_trigger_time_sits_next_to_kube_proxys_sli_per_stretch_and_overall() -> None:
    t = tracker_with_rules(["w1"])
    t.endpoint_slice("MODIFIED", eps(A, B, C, trigger="1970-01-01T00:00:09Z"), 10.0)
    rules(t, "w1", 10.5, ABC)
    t.endpoint_slice("MODIFIED", eps(A, B, C, D, trigger="1970-01-01T00:00:19Z"), 20.0)
    rules(t, "w1", 20.3, ABC | {"10.0.0.4"})
    snaps = [
        [SliSnapshot("w1", 5.0, count=0, sum=0.0)],
        [SliSnapshot("w1", 15.0, count=2, sum=3.4)],  # ours: 1.5 from the trigger; one more SLI observation
        [SliSnapshot("w1", 25.0, count=3, sum=4.8)],
    ]
    row = compare_sli(t, ["w1"], snaps)["w1"]
    assert row["sli"] == {"count": 3, "mean": pytest.approx(1.6), "error": ""}
    assert row["rules_programmed"]["count"] == 2 and row["rules_programmed"]["mean"] == pytest.approx(0.4)
    assert row["ours_from_trigger"]["mean"] == pytest.approx(1.4)
    assert row["difference"] == pytest.approx(0.2)
    assert row["unmatched"] == 1
    first, second = row["stretches"]
    assert first["difference"] == pytest.approx(0.2) and second["difference"] == pytest.approx(0.1)
    assert row["agreement"] == {
        "stretches": 2,
        "mean_difference": pytest.approx(0.15),
        "max_abs_difference": pytest.approx(0.2),
    }


# --- the measurement, the result, the CLI's pieces -------------------------------------------------------------------


def test_rule_sync_is_registered_with_its_params() -> None:
    load_catalog()
    assert MEASUREMENTS.get("rule_sync") is RuleSync
    assert MEASUREMENTS.params_model("rule_sync") is RuleSyncParams
    assert RuleSyncParams.model_validate({"namespace": "x"}).sli is True


def test_measuring_a_missing_service_fails_naming_it() -> None:
    m = RuleSync(Env(FakeKube(), FakeNodeExec(), "c"), RuleSyncParams(), "rs", "shop")
    with pytest.raises(MissingPiece, match="shop/web"):
        m.start()


def test_a_result_with_extra_figures_round_trips() -> None:
    t = tracker_with_rules()
    t.endpoint_slice("MODIFIED", eps(A, B, C), 10.0)
    for n in NODES:
        rules(t, n, 10.4, ABC)
    res = MeasurementResult("rs", "rule_sync", 1.0, 2.0, t.samples(NODES), extra={"changes": [{"number": 1}]})
    back = MeasurementResult.from_dict(json.loads(json.dumps(res.to_dict())))
    assert back == res
    assert MeasurementResult.from_dict({"name": "x", "type": "rule_sync", "started_at": 1}).extra == {}


def test_the_table_shows_a_dash_with_the_reason_for_a_percentile_with_too_few_samples() -> None:
    t = tracker_with_rules()
    t.endpoint_slice("MODIFIED", eps(A, B, C), 10.0)
    for n in NODES:
        rules(t, n, 10.4, ABC)
    res = MeasurementResult("rs", "rule_sync", 1.0, 2.0, t.samples(NODES), extra={"nodes": NODES})
    out = io.StringIO()
    print_result(res, Console(file=out, width=200))
    text = out.getvalue()
    assert "p50 needs ≥2, p90 needs ≥10 samples" in text
    assert "—" in text and "0.4s" in text


def test_probe_reports_failed_requests_only_when_asked_and_reads_only_live_nft_verdicts() -> None:
    assert '"F $q"' not in probe_script("ns", "web", "10.96.0.10", 80)
    script = probe_script("ns", "web", "10.96.0.10", 80, failures=True)
    assert 'wait $r 2>/dev/null || echo "F $q"' in script  # stamped when its round sent it
    assert "grep -o 'goto endpoint-[A-Z0-9]*-ns/web/" in script  # a flushed stale endpoint chain is not live
    assert parse_line("w1", "F 12.5") == AnswerSeen("w1", 12.5, FAILED)


def test_a_service_whose_answers_name_no_pod_is_probed_for_its_rules_only() -> None:
    script = probe_script("shop", "storefront", "10.96.0.10", 80, requests=False)
    assert "/dev/tcp" not in script and '"Q ' not in script
    assert "grep -o 'goto endpoint-[A-Z0-9]*-shop/storefront/" in script


def test_without_traffic_a_change_is_timed_by_its_rules_and_counts_as_converged_there() -> None:
    t = RuleSyncTracker(started_at=0.0, traffic=False)
    t.endpoint_slice("LISTED", eps(A, B), 0.5)
    for n in NODES:
        t.seen(RulesSeen(n, 1.0, AB, None, 1.0 + READ))
    t.endpoint_slice("MODIFIED", eps(A, B, C), 2.0)
    assert not t.converged(NODES)
    for n in NODES:
        rules(t, n, 2.4, ABC)
    assert t.converged(NODES)  # no answer will ever come, and none is awaited
    assert {s.stage for s in t.samples(NODES)} == {"rules_programmed"}
    assert stage(t, "rules_programmed", f"1@{NODES[0]}") == pytest.approx(0.4)
    assert t.incomplete(NODES) == []


def test_changes_are_parsed_and_the_workload_starts_big_enough_never_to_drop_below_two() -> None:
    assert parse_changes("scale-up, pod-deleted") == ("scale-up", "pod-deleted")
    with pytest.raises(UsageError, match="scale-sideways"):
        parse_changes("scale-up,scale-sideways")
    assert initial_replicas(["scale-up", "scale-down", "pod-deleted"]) == 3
    assert initial_replicas(["scale-down"] * 4) == 6


def test_slice_view_is_frozen() -> None:
    view = SliceView(frozenset(), frozenset(), (), None)
    with pytest.raises(AttributeError):
        view.trigger = 1.0  # type: ignore[misc]


def test_recorded_frozen_worker_is_late_by_the_freeze_and_its_requests_still_reach_the_deleted_pod() -> None:
    t = replay(DATA / "rule_sync" / "iptables-frozen-worker-pod-deleted.jsonl")
    removal, addition = t.changes
    assert removal.removed_pods and addition.added_pods
    assert t.converged(RECORDED_NODES)
    for node in RECORDED_NODES:
        programmed, follows = t.rules_programmed(removal, node), t.traffic_follows(removal, node)
        assert programmed is not None and follows is not None
        if node == "chaoskit-worker":
            assert 10.0 < programmed - removal.at < 10.5
            # refused or hung requests until its rules dropped the pod, then traffic within the bracket measured
            (end,) = [s for s in t.samples([node]) if s.stage == "traffic_follows" and s.run == removal.number]
            assert programmed <= follows < programmed + end.precision
            assert 1.0 < end.precision < 1.5  # the last round to reach the deleted pod hung for curl's 1 s
            assert t.answers[node].failed, "the frozen node's requests to the deleted pod got no answer"
        else:
            assert programmed - removal.at < 1.0 and follows - removal.at < 1.0


def test_the_table_states_the_precision_measured_typical_and_worst_per_stage_and_node() -> None:
    t = tracker_with_rules(["w1"])
    t.endpoint_slice("MODIFIED", eps(A, B, C), 10.0)
    rules(t, "w1", 10.4, ABC)
    t.endpoint_slice("MODIFIED", eps(A, B, C, D), 20.0)
    rules(t, "w1", 21.0, ABC | {"10.0.0.4"}, since=20.0)  # a read that took a second
    res = MeasurementResult("rs", "rule_sync", 1.0, 2.0, t.samples(["w1"]), extra={"nodes": ["w1"]})
    out = io.StringIO()
    print_result(res, Console(file=out, width=200))
    row = next(line for line in out.getvalue().splitlines() if "rules_programmed" in line)
    assert "±0.14s (max 1.02s)" in row
    assert "precision: per sample, the spacing measured between the probe rounds that bracket its end" in out.getvalue()
    back = MeasurementResult.from_dict(json.loads(json.dumps(res.to_dict())))
    assert [round(s.precision, 2) for s in back.samples] == [0.14, 1.02]
    assert res.to_dict()["summaries"]["rules_programmed"]["precision_median"] == pytest.approx(0.14)


def test_clamped_stages_are_named_one_by_one_up_to_a_cap() -> None:
    clamps = [
        Clamp(Sample("rule_sync", "rules_programmed", "kube-proxy", f"{i}@w1", 1.0, 1.0, 0.1, i), "why")
        for i in range(1, MAX_CLAMP_NOTES + 3)
    ]
    notes = clamp_notes(clamps)
    assert notes[0] == "rules_programmed of 1@w1 (run 1) reported as 0: why"
    assert len(notes) == MAX_CLAMP_NOTES + 1 and notes[-1].startswith("... and 2 more")


def test_request_rounds_bracket_an_answer_from_the_round_before_or_from_the_stage_start_when_none() -> None:
    r = Rounds()
    for at in (10.2, 10.0, 11.4):  # lines can arrive out of order
        r.add(at)
    assert r.precision(10.25, 9.5) == pytest.approx(0.25)  # from the round before its own
    assert r.precision(10.05, 9.5) == pytest.approx(0.55)  # the first round: nothing looked before the stage start
    assert r.precision(11.45, 9.5, last_old=10.01) == pytest.approx(1.45)  # from the round that last saw the old
    assert (r.next_start(10.05), r.next_start(11.5)) == (10.2, None)


def test_a_deleted_pod_is_the_oldest_ready_one_never_the_one_a_scale_up_just_added() -> None:
    def pod(name: str, created: str, ready: str = "True") -> dict[str, Any]:
        return {
            "metadata": {"name": name, "creationTimestamp": created, "labels": {"app": "web"}},
            "status": {"conditions": [{"type": "Ready", "status": ready}]},
        }

    base = "/api/v1/namespaces/ns/pods"
    kube = FakeKube(
        {
            f"{base}/{p['metadata']['name']}": p
            for p in (
                pod("web-a", "2026-12-04T10:00:09Z"),
                pod("web-b", "2026-12-04T10:00:01Z"),
                pod("web-c", "2026-12-04T09:59:00Z", ready="False"),
            )
        }
    )
    assert Workload(kube, "ns").change("pod-deleted") == "deleted pod web-b"  # by name first: web-a, the newest
    assert ("DELETE", f"{base}/web-b") in kube.calls


def test_with_session_affinity_no_client_moves_to_an_added_pod_so_only_removals_are_timed_for_traffic() -> None:
    t = tracker_with_rules()
    t.affinity = True
    t.endpoint_slice("MODIFIED", eps(A, B, C), 10.0)  # c added: each node's requests stay on the pod they reached
    for n in NODES:
        rules(t, n, 10.4, ABC)
        rounds(t, n, 10.3, 10.5)
        answer(t, n, 10.55, "a")
    assert t.converged(NODES) and not t.incomplete(NODES)  # the rules alone end an added endpoint's change
    assert {s.stage for s in t.samples(NODES)} == {"rules_programmed"}
    t.endpoint_slice("MODIFIED", eps(B, C), 20.0)  # a removed: its clients fall to another pod
    rounds(t, "w1", 20.05, 20.25, 20.4)
    answer(t, "w1", 20.1, "a")
    rules(t, "w1", 20.3, frozenset({"10.0.0.2", "10.0.0.3"}))
    answer(t, "w1", 20.45, "b")
    assert stage(t, "traffic_follows", "2@w1") == pytest.approx(0.45)


def test_the_rules_of_a_service_with_affinity_are_read_as_any_other() -> None:
    from chaoskit.components.kube_proxy import iptables_rules

    services, endpoints = iptables_rules((DATA / "evidence" / "kube-proxy" / "rules-iptables-affinity.txt").read_text())
    assert services == {("10.96.23.57", "tcp", 80)}
    assert endpoints == {("10.244.2.20", "tcp", 8080), ("10.244.3.19", "tcp", 8080)}  # the `-m recent` jumps too
