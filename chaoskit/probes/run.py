"""A run's probes: started before the steady state, sampled through every phase, judged per phase at the end.

The runner tells the set where the phases are (`before_ends`, `holding`/`released` per fault, `effect`,
`after_starts`); each polled kind (promql, k8s, command) is sampled by a thread of its own at its own `every`, so a
slow one (a command that takes seconds) never delays another's samples; the http kind samples inside the cluster
by itself. The before and after phases last MIN_PHASE_S at least, and until every probe judged in them has a sample
there (up to its `every` plus SAMPLE_WAIT_S). The before phase is judged as soon as it ends, so a steady state that
does not hold stops the run before anything is injected.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from chaoskit.env import Env
from chaoskit.figures import seconds
from chaoskit.model.probes import Probe
from chaoskit.model.record import ProbeRecord
from chaoskit.model.slo import Phases, ProbeSample, judge
from chaoskit.probes.base import Prober
from chaoskit.probes.command import CommandProber
from chaoskit.probes.http import HttpProber
from chaoskit.probes.k8s import K8sProber
from chaoskit.probes.promql import PromqlProber
from chaoskit.seams.shell import Runner

MIN_PHASE_S = 5.0  # the shortest before and after phases: a few samples at least, whatever `every` is
SAMPLE_WAIT_S = 30.0  # past its `every`, how long a phase waits for a probe's first sample there (a slow command's)


def prober_for(
    env: Env, probe: Probe, namespace: str, shell: Runner, node_of: Callable[[str], str] = lambda n: n
) -> Prober:
    """`node_of` resolves an http probe's node (a name or a role) to a node name."""
    if probe.http is not None:
        node = node_of(probe.http.node) if probe.http.node else None
        return HttpProber(env.kube, probe.http, probe.every, namespace, f"probe-{probe.name}", node)
    if probe.promql is not None:
        return PromqlProber(probe.promql)
    if probe.k8s is not None:
        return K8sProber(env.kube, probe.k8s)
    assert probe.command is not None
    return CommandProber(shell, probe.command)


@dataclass
class ProbeSet:
    probes: list[tuple[Probe, Prober]]
    say: Callable[[str], None] = lambda _: None
    phases: Phases = field(default_factory=Phases)
    polled: dict[str, list[ProbeSample]] = field(default_factory=dict)
    started_at: float = 0.0
    _held: dict[str, float] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        started: list[Prober] = []
        try:
            for probe, prober in self.probes:
                prober.start()
                started.append(prober)
                self.polled[probe.name] = []
        except BaseException:
            for prober in started:
                prober.stop()
            raise
        self.started_at = time.time()
        for probe, prober in self.probes:
            if prober.polled:
                thread = threading.Thread(
                    target=self._poll, args=(probe, prober), name=f"probe-{probe.name}", daemon=True
                )
                thread.start()
                self._threads.append(thread)
        self.say(f"probing {', '.join(f'{p.name} ({p.kind}, every {seconds(p.every)})' for p, _ in self.probes)}")

    def _poll(self, probe: Probe, prober: Prober) -> None:
        samples = self.polled[probe.name]
        while not self._stop.is_set():
            due = time.monotonic() + probe.every
            samples.append(prober.poll())
            self._stop.wait(max(0.0, due - time.monotonic()))

    def _sampled_since(self, since: float, phase: str, stop: threading.Event | None) -> None:
        """Wait until every polled probe judged in `phase` has a sample taken at `since` or later (a sample is kept
        once it is done), each for at most its `every` plus SAMPLE_WAIT_S from `since`."""
        for probe, prober in self.probes:
            if prober.polled and phase in probe.when:
                until = since + probe.every + SAMPLE_WAIT_S
                while not any(s.at >= since for s in self.polled[probe.name]) and time.time() < until:
                    if (stop or self._stop).wait(0.1):
                        return

    def before_ends(self, stop: threading.Event | None = None) -> list[ProbeRecord]:
        """Close the before phase (after MIN_PHASE_S at least, and a sample of each probe judged in it) and judge it:
        the records of probes that failed it."""
        self._wait(self.started_at + MIN_PHASE_S, stop)
        self._sampled_since(self.started_at, "before", stop)
        self.phases.before = (self.started_at, time.time())
        failed = []
        for probe, prober in self.probes:
            if "before" in probe.when:
                (result,) = judge(
                    probe.model_copy(update={"when": ["before"]}), self._samples(probe, prober), self.phases
                )
                if not result.ok:
                    failed.append(ProbeRecord(probe.name, probe.kind, probe.weight, [result], []))
        return failed

    def holding(self, key: str) -> None:
        self._held[key] = time.time()
        self.phases.effects.append(self._held[key])

    def released(self, key: str) -> None:
        if (start := self._held.pop(key, None)) is not None:
            self.phases.during.append((start, time.time()))

    def after_starts(self) -> None:
        self.phases.after = (time.time(), float("inf"))

    def finish(self, stop: threading.Event | None = None) -> list[ProbeRecord]:
        """Stop sampling (the after phase given MIN_PHASE_S and a sample of each probe judged in it first), collect,
        judge every phase."""
        if self.phases.after is not None:
            self._wait(self.phases.after[0] + MIN_PHASE_S, stop)
            self._sampled_since(self.phases.after[0], "after", stop)
            self.phases.after = (self.phases.after[0], time.time())
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        out = []
        for probe, prober in self.probes:
            prober.stop()  # an http probe reads its pod's log a last time first
            samples = self._samples(probe, prober)
            out.append(ProbeRecord(probe.name, probe.kind, probe.weight, judge(probe, samples, self.phases), samples))
        return out

    def _samples(self, probe: Probe, prober: Prober) -> list[ProbeSample]:
        return list(self.polled.get(probe.name, [])) if prober.polled else prober.collect()

    @staticmethod
    def _wait(until: float, stop: threading.Event | None) -> None:
        if (left := until - time.time()) > 0:
            (stop or threading.Event()).wait(left)
