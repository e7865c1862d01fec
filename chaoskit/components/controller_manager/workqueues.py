"""kube-controller-manager's work queues as its /metrics shows them (client-go's workqueue metrics, one series per
queue, labelled `name`), and the two questions chaoskit asks of a queue: is it stuck now (two scrapes, on a process
that may have run for days), and has it worked since its process started (one scrape, just after a restart)."""

from __future__ import annotations

from dataclasses import dataclass

from chaoskit.components.controller_manager.controllers import BY_QUEUE, Controller
from chaoskit.seams.scrape import Metrics

DEPTH = "workqueue_depth"  # items waiting for a worker
ADDS = "workqueue_adds_total"
DONE = "workqueue_work_duration_seconds_count"  # items a worker finished: one observation each
UNFINISHED = "workqueue_unfinished_work_seconds"  # seconds of work in progress, over the busy workers
LONGEST = "workqueue_longest_running_processor_seconds"
METRICS = (DEPTH, UNFINISHED, LONGEST, ADDS, DONE)  # what a diagnosis scrapes
WORKED = (DEPTH, DONE)  # what queue_works reads


def depths(metrics: Metrics) -> dict[str, float]:
    """Items waiting, per queue."""
    return metrics.group(DEPTH, "name")


def unfinished(metrics: Metrics) -> dict[str, float]:
    """Seconds of work in progress, per queue."""
    return metrics.group(UNFINISHED, "name")


def backed_up(metrics: Metrics, most: float) -> dict[str, float]:
    """Queues holding more than `most` items: their controller cannot keep up, or keeps re-queueing."""
    return {q: d for q, d in depths(metrics).items() if d > most}


def working_long(metrics: Metrics, seconds: float) -> dict[str, float]:
    """Queues with more than `seconds` of work in progress: a worker is stuck on one item."""
    return {q: s for q, s in unfinished(metrics).items() if s > seconds}


@dataclass(frozen=True)
class StuckQueue:
    queue: str
    depth: float  # items waiting at the second scrape
    added: float  # items added during the window
    controller: Controller | None


def stuck_queues(before: Metrics, after: Metrics) -> list[StuckQueue]:
    """Which queues hold items at both scrapes that no worker took in between, with no worker busy on one?

    The finished count is cumulative over the process's life, so only its change between two scrapes says whether a
    process that has run for a while still works a queue; a busy worker (unfinished work) is slow, not stuck."""
    if not before or not after:
        return []
    depth0, depth1 = depths(before), depths(after)
    done0, done1 = before.group(DONE, "name"), after.group(DONE, "name")
    adds0, adds1 = before.group(ADDS, "name"), after.group(ADDS, "name")
    busy = unfinished(after)
    found = []
    for queue, depth in sorted(depth1.items()):
        if depth < 1 or depth0.get(queue, 0) < 1 or busy.get(queue, 0) > 0:
            continue
        if done1.get(queue, 0) != done0.get(queue, 0):  # it worked, or the process restarted in between
            continue
        found.append(StuckQueue(queue, depth, max(0.0, adds1.get(queue, 0) - adds0.get(queue, 0)), BY_QUEUE.get(queue)))
    return found


def queue_works(metrics: Metrics, queue: str) -> bool:
    """Has the controller of `queue` started, and taken work since its process started, if it was given any?

    One scrape answers only just after a restart: the finished count starts at zero with the process, so a queue
    holding items with none finished is one no worker takes (a controller run with no worker), and a queue missing
    from /metrics is one whose controller did not start (left out by --controllers)."""
    depth = depths(metrics).get(queue)
    done = metrics.group(DONE, "name").get(queue)
    return depth is not None and (depth == 0 or bool(done))
