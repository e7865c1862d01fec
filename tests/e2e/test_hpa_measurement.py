"""HPA-to-Ready measured on the real cluster: every stage of a scale-up shows, each owned by its component, and a
fault moves the time into the stage of the component it breaks (and nowhere else).

Read from the session's catalog run (tests/e2e/catalog.py): its scheduler-down, controller-manager-hung and
apiserver-down playbooks measure a scale-up their step asks for at a known moment (`scaleUp`), so no fault is
injected here again.
"""

from __future__ import annotations

from typing import Any

import pytest

from chaoskit import workloads
from chaoskit.env import Env
from chaoskit.measurements.base import TargetParams
from chaoskit.measurements.hpa_scale_up import HpaScaleUp, MissingPiece
from chaoskit.measurements.probe import INTERVAL
from chaoskit.measurements.watch import CALIBRATION_WRITES
from chaoskit.model.moments import epoch
from chaoskit.model.timeline import HPA_STAGES, MeasurementResult, Sample
from chaoskit.seams.kube import Kube
from tests.e2e.catalog import Catalog
from tests.e2e.radius import WORKLOAD, namespace, touches


def _measured(catalog: Catalog, fault: str) -> tuple[dict[str, Any], dict[str, float], MeasurementResult]:
    """The one step of `fault` in the catalog, when its effect showed and it was reverted, and its run's scale-up."""
    ((run, step),) = catalog.steps(fault)
    (result,) = [MeasurementResult.from_dict(m) for m in run["measurements"] if m["type"] == "hpa_scale_up"]
    return step, catalog.moments[(run["playbook"], step["step"])], result


def _stage(result: MeasurementResult, stage: str) -> list[Sample]:
    return [s for s in result.samples if s.stage == stage]


@touches()
def test_in_the_catalog_a_scale_up_shows_every_stage_with_its_owner_and_precision(catalog: Catalog) -> None:
    """The scale-up the controller-manager-hung playbook asks for: past the HPA, every stage as on a healthy
    cluster."""
    _, _, result = _measured(catalog, "controller-manager.hung")
    pods = {s.subject for s in _stage(result, "ready")}
    assert len(pods) == 2, result.notes
    for stage in HPA_STAGES:
        samples = _stage(result, stage.name)
        assert samples, f"no {stage.name} sample: {result.notes}"
        assert {s.component for s in samples} == {stage.component}
    nodes = {s.subject.split("@")[1] for s in _stage(result, "rules_programmed")}
    assert nodes == {"chaoskit-control-plane", "chaoskit-worker", "chaoskit-worker2"}
    # both ends seen by our watches: as precise as a watch event is late on this cluster, measured over this run (its
    # five writes at the start, then one a second while it ran)
    watch = result.extra["watch_delay"]
    assert watch["writes"] > CALIBRATION_WRITES and watch["max_s"] > watch["clock_resolution_s"], watch
    assert all(abs(s.precision - watch["max_s"]) < 1e-3 for s in _stage(result, "scheduled")), watch
    # the dataplane stages carry the brackets measured by the probe's two loops, each wider than their pause between
    # rounds; the rules' two reads stay under 1.5 s on a busy host, a request round up to curl's 1 s and the next round
    rules, first = _stage(result, "rules_programmed"), _stage(result, "first_request")
    assert all(INTERVAL < s.precision < 1.5 for s in rules), [round(s.precision, 3) for s in rules]
    assert all(INTERVAL < s.precision < 2.5 for s in first), [round(s.precision, 3) for s in first]
    assert len({s.precision for s in rules + first}) > 1, "one precision for every sample: a constant, not measured"
    for s in result.samples:  # a 0 is either measured or named in the notes
        assert s.end > s.start or any(n.startswith(f"{s.stage} of {s.subject} ") for n in result.notes), s
    summaries = result.summaries()
    assert summaries["scheduled"].max is not None and summaries["scheduled"].max < 5
    assert summaries["total"].p99 is None and "p99 needs at least 100 samples" in " ".join(summaries["total"].notes)
    assert result.gaps == []
    print(
        "\n"
        + "\n".join(
            f"{k}: p50 {v.p50} max {v.max:.3f} precision median {v.precision_median:.3f} max {v.precision:.3f}"
            for k, v in summaries.items()
            if v.max is not None
        )
    )
    print("\n".join(result.notes))


@touches()
def test_in_the_catalog_scheduler_down_lands_in_the_scheduling_stage(catalog: Catalog) -> None:
    """The scheduler-down playbook: the pods its HPA created while the scheduler was stopped were bound only once it
    was back, and no other stage of theirs was slow: the outage landed in the scheduler's stage."""
    step, moment, result = _measured(catalog, "scheduler.down")
    down = [s for s in _stage(result, "scheduled") if moment["effect"] <= s.start <= moment["reverted"]]
    assert len(down) == 2, f"pods created while the scheduler was down ({moment}): {down}; {result.notes}"
    for s in down:  # bound after the revert, within the scheduler's restart and lease
        waited = s.end - moment["reverted"]
        assert -2 <= waited <= 30, f"{s.subject} bound {waited:.1f}s after the revert ({s.seconds:.1f}s after creation)"
    pods = {s.subject for s in down}
    for other in ("pod_created", "containers_started", "endpoint_ready"):
        slow = [(s.subject, round(s.seconds, 1)) for s in _stage(result, other) if s.subject in pods and s.seconds >= 8]
        assert not slow, f"{other} was slow too: {slow}"
    print(
        f"\nscheduled stage of the pods created while the scheduler was down: "
        f"{[round(s.seconds, 1) for s in down]} (held {step['held_s']:.0f}s)"
    )


@touches()
def test_in_the_catalog_a_hung_controller_manager_stops_the_path_at_the_hpa_until_it_resumes(
    catalog: Catalog,
) -> None:
    step, moment, result = _measured(catalog, "controller-manager.hung")
    decision = _stage(result, "hpa_decision")
    assert len(decision) == 1 and step["scaled_up_at"] is not None, result.notes
    assert decision[0].start == pytest.approx(epoch(step["scaled_up_at"]), abs=1.0)  # asked at the effect, while frozen
    assert decision[0].end >= moment["reverted"] - 1, "the HPA acted while the controller manager was frozen"
    assert len(_stage(result, "ready")) == 2
    print(f"\nhpa_decision stage under a hung controller manager: {decision[0].seconds:.1f}s")


@touches()
def test_in_the_catalog_an_api_server_restart_mid_measurement_is_a_marked_gap_and_the_watches_resume(
    catalog: Catalog,
) -> None:
    """The apiserver-down playbook measures across the outage and asks for 2 pods once the API server is back."""
    step, _, result = _measured(catalog, "apiserver.down")
    assert result.gaps, "the outage must be marked, not skipped"
    assert all(g.end > g.start for g in result.gaps) and any("broke" in g.reason for g in result.gaps)
    assert step["scaled_up_at"] is not None
    assert len(_stage(result, "ready")) == 2, result.notes  # the watches came back and saw the scale-up
    print(f"\ngaps: {[(round(g.end - g.start, 1), g.reason[:60]) for g in result.gaps]}")


@touches(namespace("e2e-missing-hpa", "watches"), WORKLOAD)
def test_a_missing_hpa_is_named(kube: Kube, cluster: str, ns: str) -> None:
    kube.apply(workloads.web_deployment(ns))
    with pytest.raises(MissingPiece, match="no HPA"):
        HpaScaleUp(Env.for_kind(kube, cluster), TargetParams(), "x", ns).start()
