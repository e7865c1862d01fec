"""The playbook's measurements: all started before the first fault (one that cannot start aborts the run, nothing
injected), all stopped after the last."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from pydantic import BaseModel

from chaoskit.env import Env
from chaoskit.figures import seconds
from chaoskit.measurements.base import Measurement
from chaoskit.model.timeline import MeasurementResult
from chaoskit.run.plan import PlannedMeasurement


def start_measurements(
    env: Env,
    planned: Sequence[PlannedMeasurement],
    namespace: str,
    aimed: Callable[[BaseModel], BaseModel],
    say: Callable[[str], None],
) -> list[Measurement]:
    """Every planned measurement started, its target `aimed` at the run's subject (in chaoskit's `namespace` unless
    it names one); none left running when one fails to start."""
    running: list[Measurement] = []
    try:
        for ref in planned:
            params = aimed(ref.params)
            m = ref.measurement(env, params, ref.name, getattr(params, "namespace", "") or namespace)
            m.say = say
            m.start()
            running.append(m)
            say(f"measuring {ref.name} ({ref.kind})")
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
