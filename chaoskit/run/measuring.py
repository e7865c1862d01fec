"""The playbook's measurements: all started before the first fault (one that cannot start aborts the run, nothing
injected), all stopped after the last."""

from __future__ import annotations

import time
from collections.abc import Callable

from pydantic import BaseModel

from chaoskit.env import Env
from chaoskit.figures import seconds
from chaoskit.measurements.base import Measurement
from chaoskit.model.playbook import Playbook
from chaoskit.model.timeline import MeasurementResult
from chaoskit.registry import MEASUREMENTS, Registered, Registry


def start_measurements(
    env: Env,
    pb: Playbook,
    aimed: Callable[[BaseModel], BaseModel],
    say: Callable[[str], None],
    measurements: Registry[Registered] = MEASUREMENTS,
) -> list[Measurement]:
    """Every measurement of the playbook started, its target `aimed` at the run's subject; none left running when
    one fails to start."""
    running: list[Measurement] = []
    try:
        for ref in pb.spec.measurements:
            params = aimed(measurements.params_model(ref.type).model_validate(ref.params))
            namespace = getattr(params, "namespace", "") or pb.spec.namespace
            m: Measurement = measurements.get(ref.type)(env, params, ref.name, namespace)  # type: ignore[call-arg,assignment]
            m.say = say
            m.start()
            running.append(m)
            say(f"measuring {ref.name} ({ref.type})")
    except BaseException:
        for m in running:
            m.stop()
        raise
    return running


def stop_measurements(running: list[Measurement], say: Callable[[str], None]) -> dict[str, MeasurementResult]:
    """Each stopped in turn (stop() waits for pods on their way), by label."""
    results = {}
    for m in running:
        t0 = time.monotonic()
        results[m.label] = m.stop()
        say(f"measurement {m.label} stopped ({seconds(time.monotonic() - t0)})")
    return results
