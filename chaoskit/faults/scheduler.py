"""Scheduler faults: down (new pods stay Pending with no FailedScheduling events)."""

from __future__ import annotations

from chaoskit.faults.base import register
from chaoskit.faults.control_plane import StaticPodDown


@register
class SchedulerDown(StaticPodDown):
    """kube-scheduler stopped: new pods stay Pending and, unlike a scheduling failure, get no FailedScheduling event."""

    name = "scheduler.down"
    component = "scheduler"
    process = "kube-scheduler"
    health_port = 10259
