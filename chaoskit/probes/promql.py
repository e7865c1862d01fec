"""promql probe: an instant query's first value compared with min/max, against the Prometheus that
`chaoskit metrics prometheus up` runs or a given URL."""

from __future__ import annotations

import time
from pathlib import Path

from chaoskit.cluster.prometheus.server import PrometheusError, Server, adopt, default_dir
from chaoskit.model.probes import PromqlProbe
from chaoskit.model.slo import ProbeSample
from chaoskit.probes.base import ProbeError, Prober


class PromqlProber(Prober):
    def __init__(self, spec: PromqlProbe, workdir: Path | None = None) -> None:
        self.spec, self.workdir = spec, workdir or default_dir()
        self.server: Server | None = None

    def start(self) -> None:
        server = Server(self.spec.url, 0, Path(".")) if self.spec.url else adopt(self.workdir)
        if server is None:
            raise ProbeError("promql probe: no url, and no Prometheus runs (chaoskit metrics prometheus up)")
        self.server = server
        try:
            server.query(self.spec.query)  # a query Prometheus refuses is the probe's error, not a sample
        except PrometheusError as exc:
            raise ProbeError(f"promql probe {self.spec.query!r}: {exc}") from exc

    def poll(self) -> ProbeSample:
        at = time.time()
        assert self.server is not None
        try:
            result = self.server.query(self.spec.query)
        except PrometheusError as exc:
            return ProbeSample(at, False, None, str(exc)[:200])
        if not result:
            return ProbeSample(at, False, None, "the query returned no value")
        value = float(result[0]["value"][1])
        low, high = (
            self.spec.min is not None and value < self.spec.min,
            self.spec.max is not None and value > self.spec.max,
        )
        bound = f", below its min {self.spec.min:g}" if low else f", above its max {self.spec.max:g}" if high else ""
        return ProbeSample(at, not (low or high), value, f"{self.spec.query} = {value:g}{bound}")
