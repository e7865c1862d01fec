"""Running the diagnosers: every component (each node for the per-node ones) collected in parallel, judged, and
gathered into one Diagnosis.

The API server is asked once before anything else, so that when it is down every diagnoser knows at once and falls
back to node-local evidence instead of each waiting out its own timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from chaoskit.diagnosers.base import (
    DIAGNOSERS,
    ComponentReport,
    Diagnoser,
    Diagnosis,
    Evidence,
    Finding,
    diagnoser_class,
)
from chaoskit.diagnosers.sources import API_TIMEOUT, Sources
from chaoskit.faults.base import Env
from chaoskit.registry import load_catalog

# The document's troubleshooting order: API server, its store, then the components that depend on it; chaoskit's
# own reverts last (their findings still rank first: see CAUSAL_RANK).
ORDER = ("apiserver", "etcd", "scheduler", "controller-manager", "kubelet", "kube-proxy", "runtime", "reverts")
PARALLEL = 6  # collection waits on docker exec and HTTP, not on our CPU


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
    say: Callable[[str], None] = lambda _: None,
) -> Diagnosis:
    names = components(wanted)
    started, t0 = time.time(), time.monotonic()
    src = Sources.of(env, control_plane, tuple(nodes), api_timeout)
    probe = src.api.raw("/readyz")
    if src.api.down:
        say(f"API server unreachable ({src.api.down}); using node-local evidence")
    elif not probe.ok:
        say(f"API server answers but is not ready: {probe.error}")
    jobs = [(name, node) for name in names
            for node in (src.nodes if diagnoser_class(name).per_node else (control_plane,))]  # fmt: skip
    with ThreadPoolExecutor(max_workers=PARALLEL, thread_name_prefix="chaoskit-diagnose") as pool:
        reports = list(pool.map(lambda job: _one(src, *job, say=say), jobs))
    return Diagnosis(env.cluster, tuple(reports), started, time.monotonic() - t0)


def _one(src: Sources, component: str, node: str, *, say: Callable[[str], None]) -> ComponentReport:
    diagnoser: Diagnoser[Any, Any] = diagnoser_class(component)()
    t0 = time.monotonic()
    try:
        report = diagnoser.report(diagnoser.collect(src, node), node)
    except Exception as exc:  # one broken collector must not cost the other components' reports
        report = collection_failed(component, node, exc)
    say(f"{component} on {node}: {report.status} ({time.monotonic() - t0:.1f}s)")
    return report


def collection_failed(component: str, node: str, exc: BaseException) -> ComponentReport:
    """A report that says the evidence could not be collected (a tool failure, not a verdict on the component)."""
    e = Evidence("collect", f"chaoskit diagnose {component}", {"error": f"{type(exc).__name__}: {exc}"[:500]},
                 available=False)  # fmt: skip
    finding = Finding(
        "warning", component, "Evidence could not be collected",
        f"chaoskit failed while reading {component} on {node}: {type(exc).__name__}: {str(exc)[:200]}",
        (e,), ("rerun with a single component (chaoskit diagnose COMPONENT) to see the error alone",),
    )  # fmt: skip
    return ComponentReport(component, node, "degraded", (finding,), (e,))
