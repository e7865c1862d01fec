"""Running the diagnosers: every component (each node for the per-node ones) collected at once, judged, and
gathered into one Diagnosis, within a time budget.

The API server is asked once, in the background, while the node-side evidence is collected: when it does not answer,
every API read waits for that one answer and then falls back at once instead of each waiting out its own timeout.
Every wait (node scripts, API reads, the components themselves) ends by the budget's deadline, so a frozen API
server or etcd costs the budget at most; what was not collected by then is reported as such.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from chaoskit.components.table import ORDER
from chaoskit.diagnosers.kit.base import (
    DIAGNOSERS,
    UNCOLLECTED,
    ComponentReport,
    Diagnoser,
    Diagnosis,
    Evidence,
    Finding,
    diagnoser_class,
)
from chaoskit.diagnosers.kit.budget import Budget, leashed
from chaoskit.diagnosers.kit.managed import MANAGED, out_of_reach_noted, through_api
from chaoskit.diagnosers.kit.owning import own
from chaoskit.diagnosers.kit.sources import API_TIMEOUT, Fetched, Sources
from chaoskit.diagnosers.subject import COMPONENT as SUBJECT
from chaoskit.diagnosers.subject import collect as collect_subject
from chaoskit.diagnosers.subject import report as subject_report
from chaoskit.env import Env
from chaoskit.figures import seconds
from chaoskit.registry import load_catalog
from chaoskit.subject import Subject

BUDGET = 8.0  # seconds for the whole collection at most: a healthy cluster needs about 2, a frozen component 4-5
QUORUM_READ = "/api/v1/nodes"  # a list served from etcd (no resourceVersion), which the diagnosers read anyway
GRACE = 1.0  # seconds past the deadline for a component to judge what it collected


def components(wanted: Sequence[str] = ()) -> list[str]:
    """The registered diagnosers to run, in troubleshooting order; unknown names raise UnknownName."""
    load_catalog(("chaoskit.diagnosers",))
    names = list(dict.fromkeys(wanted)) or DIAGNOSERS.names()
    for name in names:
        DIAGNOSERS.get(name)
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def diagnose(
    env: Env,
    control_plane: str,
    nodes: Sequence[str],
    wanted: Sequence[str] = (),
    *,
    api_timeout: float = API_TIMEOUT,
    budget: float = BUDGET,
    say: Callable[[str], None] = lambda _: None,
    subject: Subject | None = None,
    out_of_reach: frozenset[str] = frozenset(),
) -> Diagnosis:
    """`nodes` are the nodes chaoskit reaches; a control plane in `out_of_reach` (managed, or no agent there) is
    judged from what the API server shows of itself, and its node-local evidence is said to be out of reach."""
    names = components(wanted)
    started, t0 = time.time(), time.monotonic()
    deadline = Budget(budget)
    src = Sources.of(env, control_plane, tuple(nodes), api_timeout, deadline).batched()
    src.out_of_reach, src.elsewhere = out_of_reach, through_api
    src.api.probe("/readyz", then=partial(_said_probe, say))
    src.api.prefetch(QUORUM_READ)
    jobs = [
        (name, node)
        for name in names
        for node in _subjects(diagnoser_class(name), src.nodes, control_plane, out_of_reach)
    ]
    # collection waits on docker exec and HTTP, not on our CPU: every job at once
    outcomes = leashed(
        [partial(_one, src, *job, say=say) for job in jobs], deadline.remaining() + GRACE, name="chaoskit-diagnose"
    )
    reports = [
        o.value if o.value is not None else _unfinished(*job, budget, o.error)
        for job, o in zip(jobs, outcomes, strict=True)
    ]
    reports = [out_of_reach_noted(r) if r.subject in out_of_reach else r for r in reports]
    if subject is not None:  # after the components: they are the likelier cause of what ails it
        reports.append(_subject(src, subject))
    return Diagnosis(env.cluster, own(reports), started, time.monotonic() - t0)


def _subjects(
    cls: type[Diagnoser[Any, Any]], reached: Sequence[str], control_plane: str, out_of_reach: frozenset[str]
) -> tuple[str, ...]:
    """The nodes a diagnoser reports on: the control plane, or each node reached and, where the API shows enough of
    a node (kubelet), each one out of reach too (not a managed control plane that is no node)."""
    if not cls.per_node:
        return (control_plane,)
    elsewhere = tuple(sorted(n for n in out_of_reach if n != MANAGED)) if cls.out_of_reach_too else ()
    return (*elsewhere, *reached)


def _subject(src: Sources, s: Subject) -> ComponentReport:
    try:
        return subject_report(collect_subject(src, s))
    except Exception as exc:  # as for a component: one broken look must not cost the others
        return collection_failed(SUBJECT, f"{s.kind} {s.namespace}/{s.name}", exc)


def _said_probe(say: Callable[[str], None], probe: Fetched, down: str) -> None:
    if down:
        say(f"API server unreachable ({down}); using node-local evidence")
    elif not probe.ok:
        say(f"API server answers but is not ready: {probe.error}")


def _one(src: Sources, component: str, node: str, *, say: Callable[[str], None]) -> ComponentReport:
    diagnoser: Diagnoser[Any, Any] = diagnoser_class(component)()
    t0 = time.monotonic()
    try:
        report = diagnoser.report(diagnoser.collect(src, node), node)
    except Exception as exc:  # one broken collector must not cost the other components' reports
        report = collection_failed(component, node, exc)
    say(f"{component} on {node}: {report.status} ({seconds(time.monotonic() - t0)})")
    return report


def _unfinished(component: str, node: str, budget: float, error: BaseException | None) -> ComponentReport:
    """The report of a component whose collection did not end within the budget (or died outside `_one`)."""
    return collection_failed(
        component, node, error or TimeoutError(f"not collected within the {seconds(budget)} budget")
    )


def collection_failed(component: str, node: str, exc: BaseException) -> ComponentReport:
    """A report that says the evidence could not be collected (a tool failure, not a verdict on the component)."""
    e = Evidence(
        "collect", f"chaoskit diagnose {component}", {"error": f"{type(exc).__name__}: {exc}"[:500]}, available=False
    )
    finding = Finding(  # a warning with no verdict: the report's status is unknown, not degraded
        "warning",
        component,
        UNCOLLECTED,
        f"chaoskit failed while reading {component} on {node}: {type(exc).__name__}: {str(exc)[:200]}",
        (e,),
        ("rerun with a single component (chaoskit diagnose COMPONENT) to see the error alone",),
    )
    return ComponentReport(component, node, "unknown", (finding,), (e,))
