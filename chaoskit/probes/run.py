"""A run's probes: started before the steady state, sampled through every phase, judged per phase at the end.

The runner tells the set where the phases are (`before_ends`, `holding`/`released` per fault, `effect`,
`after_starts`); polled kinds (promql, k8s, command) are sampled by one thread here, each at its own `every`; the
http kind samples inside the cluster by itself. The before phase is judged as soon as it ends, so a steady state
that does not hold stops the run before anything is injected.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chaoskit.cluster.shell import Runner
from chaoskit.env import Env
from chaoskit.model.probes import Probe
from chaoskit.model.slo import PhaseResult, Phases, ProbeSample, judge
from chaoskit.probes.base import Prober
from chaoskit.probes.command import CommandProber
from chaoskit.probes.http import HttpProber
from chaoskit.probes.k8s import K8sProber
from chaoskit.probes.promql import PromqlProber

MIN_PHASE_S = 5.0  # the shortest before and after phases: a few samples at least, whatever `every` is


def prober_for(env: Env, probe: Probe, namespace: str, shell: Runner,
               node_of: Callable[[str], str] = lambda n: n) -> Prober:  # fmt: skip
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
class ProbeRecord:
    name: str
    kind: str
    weight: float
    phases: list[PhaseResult]
    samples: list[ProbeSample]

    @property
    def ok(self) -> bool:
        return all(p.ok for p in self.phases)

    def failed_phases(self) -> list[PhaseResult]:
        return [p for p in self.phases if not p.ok]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "weight": self.weight, "ok": self.ok,
                "phases": [p.to_dict() for p in self.phases],
                "samples": [[round(s.at, 3), s.ok, s.value, s.detail] for s in self.samples]}  # fmt: skip


@dataclass
class ProbeSet:
    probes: list[tuple[Probe, Prober]]
    say: Callable[[str], None] = lambda _: None
    phases: Phases = field(default_factory=Phases)
    polled: dict[str, list[ProbeSample]] = field(default_factory=dict)
    started_at: float = 0.0
    _held: dict[str, float] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

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
        self._thread = threading.Thread(target=self._poll, name="probes", daemon=True)
        self._thread.start()
        self.say(f"probing {', '.join(f'{p.name} ({p.kind}, every {p.every:g}s)' for p, _ in self.probes)}")

    def _poll(self) -> None:
        due = {p.name: 0.0 for p, prober in self.probes if prober.polled}
        while not self._stop.is_set():
            now = time.monotonic()
            for probe, prober in self.probes:
                if prober.polled and now >= due[probe.name]:
                    due[probe.name] = now + probe.every
                    self.polled[probe.name].append(prober.poll())
            self._stop.wait(0.05)

    def before_ends(self, stop: threading.Event | None = None) -> list[ProbeRecord]:
        """Close the before phase (after MIN_PHASE_S at least) and judge it: the records of probes that failed it."""
        self._wait(self.started_at + MIN_PHASE_S, stop)
        self.phases.before = (self.started_at, time.time())
        failed = []
        for probe, prober in self.probes:
            if "before" in probe.when:
                (result,) = judge(probe.model_copy(update={"when": ["before"]}), self._samples(probe, prober),
                                  self.phases)  # fmt: skip
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
        """Stop sampling (the after phase given MIN_PHASE_S first), collect, judge every phase."""
        if self.phases.after is not None:
            self._wait(self.phases.after[0] + MIN_PHASE_S, stop)
            self.phases.after = (self.phases.after[0], time.time())
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
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
