"""The peers' own problems on the real cluster, broken by hand as a user's incident would be (kubectl and docker exec,
nothing of chaoskit's): one of each class standing at once, each named by `chaoskit diagnose` through its root-cause
entities with none of its victims blamed; then, everything put back, the no-fault control names nothing.

One look for all of them: each class costs its setup, not a cluster's worth of waiting (bench/peer_problems.py runs
every problem alone and scores it)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from tests.e2e.peers import PROBLEMS, Problem, broken, diagnose, named_roots, tear_down

# the batch of problems stands broken from the first test until the second puts it back
pytestmark = pytest.mark.one_hold

# one problem of each class the diagnosis owes: DNS, admission, scheduling by an object, a node condition, a node
# component's RBAC, a crash loop with its reason
BATCH = (
    "stale-coredns-config",
    "admission-webhook-outage",
    "non-existent-node",  # a cordon would meet the eviction threshold on the same worker: bench runs it alone
    "kubelet-eviction-threshold",
    "kube-proxy-rbac",
    "crash-loop",
)
# what a busy 2-core host rightly adds to any look (a slow etcd, the API server waiting for a CPU): no problem's
HOST = re.compile(r"^(host/cpu|etcd/|apiserver/)")


@pytest.fixture(scope="module")
def batch() -> Iterator[list[Problem]]:
    problems = [p for p in PROBLEMS if p.name in BATCH]
    assert sorted(p.name for p in problems) == sorted(BATCH)
    try:
        broken(problems)
        yield problems
    finally:  # put back whatever the control did not (a failed test before it)
        for p in problems:
            tear_down(p)


def test_each_class_is_named_by_its_root_causes_and_no_victim_is_blamed(batch: list[Problem]) -> None:
    time.sleep(max(p.settle_s for p in batch))
    doc, took = diagnose()
    named = named_roots(doc)
    for p in batch:
        assert p.entities <= named, (p.name, sorted(p.entities - named), doc["summary"])
        assert not p.blameless & named, (p.name, sorted(p.blameless & named))
    wanted = frozenset().union(*(p.entities for p in batch))
    assert {n for n in named if not HOST.match(n)} <= wanted, sorted(named - wanted)
    assert doc["status"] == "failed" and doc["summary"].startswith("Root cause: "), doc["summary"]
    print(f"\n{len(batch)} problems named in one look of {took:.1f}s: {sorted(named)}")


def test_with_everything_put_back_the_no_fault_control_names_nothing(batch: list[Problem]) -> None:
    errors = [e for p in batch for e in tear_down(p)]
    assert not errors, errors
    deadline, named = time.monotonic() + 120, {"not looked"}
    while time.monotonic() < deadline:  # DNS restarted, kube-proxy resynced, the node's pressure cleared
        doc, _ = diagnose()
        named = {n for n in named_roots(doc) if not HOST.match(n)}
        if not named:
            break
        time.sleep(10)
    assert not named, (sorted(named), doc["summary"])
