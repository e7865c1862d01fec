"""What every probe kind does: start, give samples, stop. A polled kind takes one sample per call to `poll`; the
http kind samples by itself inside the cluster and hands its samples over in `collect`."""

from __future__ import annotations

from chaoskit.errors import ToolError
from chaoskit.model.slo import ProbeSample


class ProbeError(ToolError):
    """The probe could not run at all (bad URL, query error, no such object kind): chaoskit's error, exit 4."""


class Prober:
    polled = True  # sampled by the run's loop every `every`; False: samples by itself (collect)

    def start(self) -> None:
        """Anything to set up before the first sample; raises ProbeError if the probe cannot run."""

    def poll(self) -> ProbeSample:
        raise NotImplementedError

    def collect(self) -> list[ProbeSample]:
        """The samples it took by itself so far (polled kinds: none)."""
        return []

    def stop(self) -> None:
        """Undo what start set up; never raises."""
