"""kube-controller-manager's signals, written once in chaoskit.components.controller_manager: its controller table,
the bootstrap policy's names of their RBAC, and the two questions asked of a work queue."""

from __future__ import annotations

from chaoskit.components.controller_manager.controllers import BY_ALIAS, CONTROLLERS, account_of, role_name
from chaoskit.components.controller_manager.workqueues import queue_works, stuck_queues
from chaoskit.faults.controller_manager.permission import REVOKED, bootstrap_binding
from chaoskit.faults.controller_manager.stuck import STUCK
from chaoskit.seams.scrape import Metrics


def test_a_controllers_role_and_binding_are_named_after_its_service_account() -> None:
    assert role_name("node-controller") == "system:controller:node-controller"
    assert account_of("system:controller:node-controller") == "node-controller"
    assert account_of("system:node-proxier") is None and account_of("kubeadm:node-proxier") is None
    hpa = bootstrap_binding("horizontal-pod-autoscaler")
    assert hpa["metadata"]["name"] == hpa["roleRef"]["name"] == "system:controller:horizontal-pod-autoscaler"
    assert hpa["subjects"][0]["name"] == "horizontal-pod-autoscaler"


def test_the_table_gives_each_controller_one_name_alias_queue_and_account() -> None:
    for field in ("name", "alias", "queue", "account"):
        assert len({getattr(c, field) for c in CONTROLLERS}) == len(CONTROLLERS), field
    assert BY_ALIAS["replicaset"].user == "system:serviceaccount:kube-system:replicaset-controller"


def test_both_faults_read_their_controllers_from_the_one_table() -> None:
    assert {alias: s.controller for alias, s in STUCK.items()} == {alias: BY_ALIAS[alias] for alias in STUCK}
    assert STUCK["replicaset"].flag == "--concurrent-replicaset-syncs=0" and STUCK["endpointslice"].flag == ""
    assert all(c in CONTROLLERS for c in REVOKED.values())
    assert {v: c.account for v, c in REVOKED.items()} == {
        "replicaset": "replicaset-controller",
        "deployment": "deployment-controller",
        "endpointslice": "endpointslice-controller",
        "horizontal-pod-autoscaler": "horizontal-pod-autoscaler",
    }


def _queue(depth: float, done: float, busy: float = 0.0) -> Metrics:
    return Metrics.parse(
        f'workqueue_depth{{name="replicaset"}} {depth}\n'
        f'workqueue_work_duration_seconds_count{{name="replicaset"}} {done}\n'
        f'workqueue_unfinished_work_seconds{{name="replicaset"}} {busy}\n'
    )


def test_a_queue_that_worked_then_stopped_is_stuck_over_two_scrapes_though_one_scrape_says_it_has_worked() -> None:
    worked_then_stopped = _queue(depth=4, done=120)
    assert queue_works(worked_then_stopped, "replicaset")  # since the process started: the question after a restart
    assert [q.queue for q in stuck_queues(worked_then_stopped, worked_then_stopped)] == ["replicaset"]
    assert not stuck_queues(_queue(4, 120), _queue(4, 121))  # a worker took one in between
    assert not stuck_queues(_queue(4, 120), _queue(4, 120, busy=2.5))  # a worker busy on one: slow, not stuck
    assert not queue_works(_queue(depth=4, done=0), "replicaset")  # given work and none taken since the start
