"""The API server's way back, judged from looks taken every two seconds."""

from __future__ import annotations

from chaoskit.measurements.apiserver_recovery_tracker import Look, RecoveryTracker
from chaoskit.seams.scrape import Histogram

NODES = ("n1", "n2")


def _hist(count: float, slow: float = 0.0) -> Histogram:
    return Histogram(((0.1, count - slow), (1.0, count), (float("inf"), count)), count, 0.05 * count)


def _up(at: float, watches: float, renewed: dict[str, float], lists: float = 0.0, ready_nodes: int = 2) -> Look:
    return Look(at, True, watches, lists, _hist(lists), renewed, len(NODES), ready_nodes)


def _outage() -> RecoveryTracker:
    t = RecoveryTracker(fraction=0.95)
    t.look(_up(0.0, 100, {"n1": -5.0, "n2": -3.0}, lists=1000))
    t.look(Look(2.0, False, error="connection refused"))
    t.look(Look(4.0, False, error="connection refused"))
    t.look(_up(6.0, 20, {"n1": -5.0, "n2": -3.0}, lists=50, ready_nodes=1))  # a new process: counters start over
    t.look(_up(8.0, 80, {"n1": 7.5, "n2": -3.0}, lists=250, ready_nodes=1))
    t.look(_up(10.0, 96, {"n1": 7.5, "n2": 9.25}, lists=300))
    return t


def test_each_stage_is_the_first_look_that_shows_it_bracketed_by_the_look_before() -> None:
    t = _outage()
    r = t.reached()
    assert r["api_back"] is not None and (r["api_back"].at, r["api_back"].precision) == (6.0, 2.0)
    w = r["watches_back"]
    assert w is not None and (w.at, w.precision) == (10.0, 2.0), "95 of 100 watches open only at the third look"
    n = r["nodes_ready"]
    assert n is not None and n.at == 10.0
    assert t.steady()


def test_the_heartbeats_are_whole_at_the_last_nodes_first_renewal_by_its_own_stamp() -> None:
    r = _outage().leases_renewed()
    assert r is not None and r.at == 9.25 and r.precision < 0.001


def test_nothing_is_reached_while_it_has_not_been_seen() -> None:
    t = RecoveryTracker()
    t.look(_up(0.0, 100, {"n1": 0.0, "n2": 0.0}))
    assert t.down is None and t.back() is None and not t.steady(), "no outage: nothing to recover from"
    t.look(Look(2.0, False))
    t.look(_up(4.0, 50, {"n1": 5.0, "n2": 1.0}))  # n2's renewal predates the return: not a renewal after it
    r = t.reached()
    assert r["api_back"] is not None and r["watches_back"] is None and r["leases_renewed"] is None
    assert not t.steady()


def test_windows_give_list_calls_a_second_across_the_restarts_counter_reset() -> None:
    windows = _outage().windows()
    assert [(w["from"], w["to"]) for w in windows] == [(6.0, 8.0), (8.0, 10.0)]
    assert [w["lists_per_s"] for w in windows] == [100.0, 25.0]
    assert windows[0]["single_calls"] == 200 and windows[0]["watches"] == 80


def test_a_renewal_between_the_last_failed_look_and_back_counts_the_api_was_answering_by_then() -> None:
    t = RecoveryTracker()
    t.look(_up(0.0, 100, {"n1": 0.0, "n2": 0.0}))
    t.look(Look(2.0, False))
    t.look(_up(4.0, 100, {"n1": 3.5, "n2": 3.0}))
    r = t.leases_renewed()
    assert r is not None and r.at == 3.5, "renewed before our first answered look, after our last failed one"


def test_the_baseline_waits_for_terminating_namespaces_to_go() -> None:
    """An earlier playbook's namespace still terminating holds watches that go with it: not a baseline."""
    from chaoskit.measurements.apiserver_recovery import settled
    from chaoskit.seams.kube import FakeKube

    going = {"metadata": {"name": "chaoskit-before"}, "status": {"phase": "Terminating"}}
    kube = FakeKube({"/api/v1/namespaces/chaoskit-before": going, "/api/v1/namespaces/default": {"metadata": {}}})
    looks: list[int] = []
    get = kube.get

    def gone_on_the_third(path: str, **query: str) -> object:
        looks.append(1)
        if len(looks) == 3:
            kube.objects.pop("/api/v1/namespaces/chaoskit-before")
        return get(path, **query)

    kube.get = gone_on_the_third  # type: ignore[method-assign]
    assert settled(kube, 5.0, interval=0.01) > 0 and len(looks) == 3
    assert settled(kube, 5.0, interval=0.01) == 0.0  # nothing terminating: no wait
    kube.objects["/api/v1/namespaces/chaoskit-before"] = going
    assert settled(kube, 0.05, interval=0.01) > 0  # bounded: it goes on past `within`
