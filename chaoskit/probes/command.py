"""command probe: a command run where chaoskit runs (no shell); exit 0 is a success."""

from __future__ import annotations

import time

from chaoskit.errors import CommandError
from chaoskit.model.probes import CommandProbe
from chaoskit.model.slo import ProbeSample
from chaoskit.probes.base import ProbeError, Prober
from chaoskit.seams.shell import Runner


class CommandProber(Prober):
    def __init__(self, runner: Runner, spec: CommandProbe) -> None:
        self.runner, self.spec = runner, spec

    def start(self) -> None:
        import shutil

        if "/" not in self.spec.argv[0] and shutil.which(self.spec.argv[0]) is None:
            raise ProbeError(f"command probe: {self.spec.argv[0]!r} is not on PATH")

    def poll(self) -> ProbeSample:
        at = time.time()
        try:
            done = self.runner.run(self.spec.argv, timeout=self.spec.timeout, check=False)
        except CommandError as exc:  # timed out
            return ProbeSample(at, False, None, str(exc).splitlines()[0][:200])
        detail = (done.stderr or done.stdout).strip().splitlines()
        return ProbeSample(
            at,
            done.returncode == 0,
            float(done.returncode),
            f"exit {done.returncode}" + (f": {detail[-1][:200]}" if detail else ""),
        )
