"""Per-component locks and cluster recognition, against the in-memory API."""

from __future__ import annotations

import pytest

from chaoskit.cluster.marker import MARKER
from chaoskit.safety import Locked, NotOurCluster, acquire, preflight, recognise, release, release_run_locks
from chaoskit.seams.kube import Conflict, FakeKube
from chaoskit.seams.shell import FakeRunner

PS = (
    '{"Names":"chaoskit-control-plane","Image":"chaoskit/node:x","State":"running",'
    '"Labels":"io.x-k8s.kind.cluster=chaoskit,io.x-k8s.kind.role=control-plane"}\n'
)


def test_a_free_component_is_locked_and_released() -> None:
    kube = FakeKube()
    lock = acquire(kube, "scheduler", "host/run1", 60)
    assert kube.get(lock.path)["spec"]["holderIdentity"] == "host/run1"
    release(kube, lock)
    assert lock.path not in kube.objects


def test_a_component_held_by_a_live_run_is_refused() -> None:
    kube = FakeKube()
    acquire(kube, "scheduler", "host/run1", 60)
    with pytest.raises(Locked, match="another run"):
        acquire(kube, "scheduler", "host/run2", 60)


def test_the_same_run_may_take_its_own_lock_again() -> None:
    kube = FakeKube()
    acquire(kube, "kubelet", "host/run1", 60)
    acquire(kube, "kubelet", "host/run1", 60)  # concurrent steps of one run on one component


def test_an_expired_lease_is_taken_over() -> None:
    kube = FakeKube()
    lock = acquire(kube, "scheduler", "host/dead", 60)
    kube.objects[lock.path]["spec"]["renewTime"] = "2020-01-01T00:00:00.000000Z"
    acquire(kube, "scheduler", "host/run2", 60)
    assert kube.get(lock.path)["spec"]["holderIdentity"] == "host/run2"


def test_release_leaves_another_holders_lock_alone() -> None:
    kube = FakeKube()
    lock = acquire(kube, "scheduler", "host/other", 60)
    release_run_locks(kube, "mine", ["scheduler"])
    assert lock.path in kube.objects


def test_a_cluster_without_kind_nodes_is_not_ours() -> None:
    with pytest.raises(NotOurCluster, match="--allow-any-cluster"):
        recognise(FakeRunner(), FakeKube(), "prod")


def test_a_kind_cluster_without_the_marker_is_not_ours() -> None:
    runner = FakeRunner(responses={("docker", "ps"): PS})
    with pytest.raises(NotOurCluster, match=MARKER):
        recognise(runner, FakeKube(), "chaoskit")


def test_a_kind_cluster_with_the_marker_is_ours() -> None:
    runner = FakeRunner(responses={("docker", "ps"): PS})
    kube = FakeKube({f"/api/v1/namespaces/kube-system/configmaps/{MARKER}": {"metadata": {"name": MARKER}}})
    recognise(runner, kube, "chaoskit")


def test_a_lease_vanishing_between_create_and_read_is_created_again() -> None:
    class Flaky(FakeKube):
        posts = 0

        def request(self, method, path, body=None, query=None):  # type: ignore[no-untyped-def]
            if method == "POST":
                self.posts += 1
                if self.posts == 1:  # another run's lease is still being deleted...
                    raise Conflict(f"POST {path}: HTTP 409 Conflict")
            return super().request(method, path, body, query)  # ...and the GET finds it gone (404)

    kube = Flaky()
    lock = acquire(kube, "scheduler", "host/run2", 60)
    assert kube.get(lock.path)["spec"]["holderIdentity"] == "host/run2"


def test_a_dry_runs_preflight_asks_what_the_run_asks() -> None:
    """Recognition and the locks, as the run will ask them: a dry run that passes promises the run will start."""
    runner = FakeRunner(responses={("docker", "ps"): PS})
    kube = FakeKube({f"/api/v1/namespaces/kube-system/configmaps/{MARKER}": {"metadata": {"name": MARKER}}})
    preflight(runner, kube, "chaoskit", ["scheduler", "kubelet"], allow_any_cluster=False)
    acquire(kube, "scheduler", "host/other", 60)
    with pytest.raises(Locked, match="another run"):
        preflight(runner, kube, "chaoskit", ["scheduler"], allow_any_cluster=False)
    with pytest.raises(NotOurCluster):
        preflight(FakeRunner(), FakeKube(), "prod", [], allow_any_cluster=False)
    preflight(FakeRunner(), FakeKube(), "prod", ["scheduler"], allow_any_cluster=True)  # told explicitly
