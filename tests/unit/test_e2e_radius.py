"""The e2e tests' radius registry: tests side by side only where what they touch does not meet."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from tests.e2e.radius import CLUSTER, WATCHES_CLUSTER, Registry, namespace, on_node


def test_touches_meet_as_fault_radii_do_and_watchers_never_meet_each_other() -> None:
    kubelet2 = on_node("kubelet", "chaoskit-worker2")
    assert CLUSTER.meets(namespace("a")) and CLUSTER.meets(WATCHES_CLUSTER)
    assert WATCHES_CLUSTER.meets(kubelet2) and not WATCHES_CLUSTER.meets(WATCHES_CLUSTER)
    assert kubelet2.meets(on_node("kube-proxy", "chaoskit-worker"))  # a NotReady node's endpoints churn everywhere
    assert not kubelet2.meets(on_node("kubelet", "chaoskit-worker"))
    watches = on_node("kubelet", "chaoskit-worker2", "watches")
    assert not watches.meets(watches)
    assert not namespace("a").meets(namespace("b"))


def _hold(reg: Registry, name: str, touched: tuple, log: list[str], hold_s: float) -> threading.Thread:
    def body() -> None:
        with reg.holding(name, touched):
            log.append(f"+{name}")
            time.sleep(hold_s)
            log.append(f"-{name}")

    t = threading.Thread(target=body)
    t.start()
    return t


def test_what_does_not_meet_overlaps_and_what_meets_waits_its_turn(tmp_path: Path) -> None:
    reg, log = Registry(tmp_path, poll_s=0.01), []
    reg.reset()
    a = _hold(reg, "a", (on_node("kubelet", "chaoskit-worker"),), log, 0.3)
    time.sleep(0.05)
    b = _hold(reg, "b", (on_node("kubelet", "chaoskit-worker2"),), log, 0.1)  # another node: at once
    time.sleep(0.05)
    c = _hold(reg, "c", (CLUSTER,), log, 0.05)  # alone: after both
    time.sleep(0.05)
    d = _hold(reg, "d", (namespace("x"),), log, 0.05)  # meets c, which asked first: after it
    for t in (a, b, c, d):
        t.join()
    assert log[:2] == ["+a", "+b"]
    assert log.index("+c") > max(log.index("-a"), log.index("-b"))
    assert log.index("+d") > log.index("-c")


def test_an_entry_whose_worker_died_is_dropped(tmp_path: Path) -> None:
    reg = Registry(tmp_path, poll_s=0.01)
    reg.reset()
    reg.path.write_text(
        '{"next": 1, "entries": [{"ticket": 0, "pid": 999999999, "test": "dead", "holding": true,'
        ' "touched": [{"radius": {"scope": "cluster", "where": "", "component": ""}, "how": "breaks"}]}]}'
    )
    with reg.holding("next", (CLUSTER,)) as waited:
        assert waited < 1
