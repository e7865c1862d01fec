"""chaoskit as a pytest plugin (installed with the package): resilience tests written as pytest, JUnit from
`pytest --junitxml`.

Fixtures:
    chaoskit_cluster   the kind cluster (reused; created with `--chaoskit-create` when missing), session-wide
    inject             inject(fault, node=None, duration=600, deadline=None, **params): a context manager; the fault
                       is in place (its effect seen) inside the block and always reverted when the block ends
    run_playbook       run_playbook(path) -> the run record (a dict, as `chaoskit run -o json` prints it)
    measure_hpa        measure_hpa(namespace=..., runs=1, trigger="min-replicas") -> MeasurementResult

When a test fails inside an `inject` block, the failure carries chaoskit's diagnosis made with the fault still in
place (every component not ok: status, findings, probable cause, what to do); any failed test that uses the fixtures
gets one made after it too, as a report section. Options: --chaoskit-cluster NAME, --chaoskit-context CONTEXT,
--chaoskit-create, --chaoskit-allow-any-cluster.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from chaoskit.diagnosers.kit.base import Diagnosis
from chaoskit.engine import INTERRUPTED, FaultResult, run_fault
from chaoskit.env import Env, connect
from chaoskit.errors import ChaoskitError, ToolError
from chaoskit.events import speaking
from chaoskit.faults.base import Fault
from chaoskit.journal import Journal, default_journal_dir
from chaoskit.measurements.hpa_driver import measure
from chaoskit.model.moments import stamped_name
from chaoskit.model.timeline import MeasurementResult
from chaoskit.playbook import load_playbook
from chaoskit.registry import CATALOG, Catalog, load_catalog
from chaoskit.run.during import diagnose_cluster
from chaoskit.run.plan import plan
from chaoskit.runner import Runner
from chaoskit.safety import acquire, holder_id, recognise, release
from chaoskit.seams.nodeexec import DockerNodeExec, Node
from chaoskit.seams.shell import SubprocessRunner
from chaoskit.step import resolve


@dataclass(frozen=True)
class Injected:
    """A fault in place inside an `inject` block."""

    fault: str
    node: str
    effect_s: float | None
    result: dict[str, Any] = field(default_factory=dict)  # filled in when the block ends: held, recovery, errors


@dataclass
class ChaoskitCluster:
    name: str
    env: Env
    nodes: list[Node]
    journal_dir: Path
    said: list[str] = field(default_factory=list)  # what chaoskit said, for the failure report
    catalog: Catalog = CATALOG  # where fault, check and measurement names are looked up

    def say(self, message: str) -> None:
        self.said.append(message)

    @contextmanager
    def inject(
        self, fault: str, node: str | None = None, duration: float = 600.0, deadline: float | None = None, **params: Any
    ) -> Iterator[Injected]:
        """The fault in place for the block (its effect seen first); reverted when the block ends, however."""
        load_catalog()
        faults = self.catalog.faults
        the_fault: Fault = faults.get(fault)()  # type: ignore[assignment]
        model = faults.params_model(fault).model_validate(params)
        step = resolve(the_fault, model, self.nodes, target=node, duration=duration, deadline=deadline or None)
        target, seconds = step.node.name, step.deadline
        holder = holder_id(f"pytest-{int(time.time())}")
        lock = acquire(self.env.kube, step.lock, holder, seconds)
        journal = Journal(self.journal_dir / f"pytest-{fault}-{int(time.time() * 1000)}.jsonl")
        stop, effect, done = threading.Event(), threading.Event(), []

        def hold() -> None:
            emit = speaking(self.say, step=False)
            done.append(run_fault(self.env, step, journal=journal, emit=emit, stop=stop, on_effect=effect.set))

        worker = threading.Thread(target=hold, name=f"inject-{fault}", daemon=True)
        t0 = time.monotonic()
        worker.start()
        try:
            while not effect.wait(0.2) and worker.is_alive():
                pass
            if not effect.is_set():
                worker.join()
                raise _not_in_place(fault, target, done[0] if done else None)
            injected = Injected(fault, target, time.monotonic() - t0)
            try:
                yield injected
            except Exception as exc:  # the test failed with the fault in place: say what broke before reverting it
                exc.add_note(f"chaoskit diagnosis with {fault} in place on {target}:\n{self._diagnosis_text()}")
                raise
        finally:
            stop.set()
            worker.join()
            release(self.env.kube, lock)
        result = done[0]
        injected.result.update(
            held_s=result.held_s,
            stopped_holding_s=result.stopped_holding_s,
            recovery_s=result.recovery_s,
            errors=result.errors,
            failures=result.failures,
            journal=str(journal.path),
            fact_check=result.fact_check.to_dict(),
        )
        if result.failures:
            raise ToolError(f"{fault} on {target}: {'; '.join(result.failures)} (journal {journal.path})")
        # the system deviated (no effect, no recovery): the test fails; the hold ends with the block by design
        if deviated := [e for e in result.errors if e != INTERRUPTED]:
            raise AssertionError(f"{fault} on {target}: {'; '.join(deviated)} (journal {journal.path})")

    def run_playbook(self, path: str | Path) -> dict[str, Any]:
        """Run one playbook to its verdict; the record (`verdict`, `exit_code`, `score`, steps, probes, ...)."""
        load_catalog()
        c = self.catalog
        pb = load_playbook(Path(path), faults=c.faults, checks=c.checks, measurements=c.measurements)
        journal = Journal(self.journal_dir / stamped_name(f"pytest-{pb.name}", time.time(), ".jsonl"))
        return Runner(self.env, self.nodes, journal, speaking(self.say)).run(plan(pb, self.nodes, c)).to_dict()

    def measure_hpa(
        self,
        namespace: str = "chaoskit-pytest-hpa",
        runs: int = 1,
        trigger: str = "min-replicas",
        max_replicas: int = 4,
    ) -> MeasurementResult:
        """HPA-to-Ready stage by stage on chaoskit's workload in a namespace of its own (deleted after)."""
        return measure(self.env, namespace, runs, trigger, max_replicas, say=self.say)  # type: ignore[arg-type]

    def diagnose(self) -> Diagnosis | None:
        return diagnose_cluster(self.env, self.nodes, "after a failed test", speaking(self.say))

    def _diagnosis_text(self) -> str:
        try:
            return diagnosis_text(self.diagnose())
        except ChaoskitError as exc:
            return f"the diagnosis itself failed: {exc}"


def _not_in_place(fault: str, node: str, result: FaultResult | None) -> AssertionError | ToolError:
    if result is not None and result.failures:
        return ToolError(f"{fault} on {node}: chaoskit could not inject it: {'; '.join(result.failures)}")
    why = "; ".join(result.errors) if result is not None else "no result"
    return AssertionError(f"{fault} on {node} took no effect: {why}")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaoskit", "chaoskit: faults, playbooks and HPA measurements on a kind cluster")
    group.addoption("--chaoskit-cluster", default="chaoskit", help="kind cluster name (default chaoskit)")
    group.addoption("--chaoskit-context", default=None, help="kubectl context (default kind-<cluster>)")
    group.addoption(
        "--chaoskit-create", action="store_true", help="create the cluster (chaoskit cluster up) if missing"
    )
    group.addoption("--chaoskit-allow-any-cluster", action="store_true", help="act on a cluster chaoskit did not build")


@pytest.fixture(scope="session")
def chaoskit_cluster(request: pytest.FixtureRequest) -> ChaoskitCluster:
    name = request.config.getoption("--chaoskit-cluster")
    context = request.config.getoption("--chaoskit-context")
    runner = SubprocessRunner()
    if request.config.getoption("--chaoskit-create") and not DockerNodeExec(runner, name).list_nodes():
        runner.run([sys.executable, "-m", "chaoskit", "cluster", "up", "--cluster", name], timeout=3600)
    env = connect(name, context, via="docker", named=context is not None, runner=runner, lazy=True)
    nodes = env.nodes.list_nodes()
    if not nodes:
        pytest.fail(
            f"no kind cluster {name!r} on this host: `chaoskit cluster up --cluster {name}`, or pass --chaoskit-create",
            pytrace=False,
        )
    if not request.config.getoption("--chaoskit-allow-any-cluster"):
        recognise(runner, env.kube, name)
    journals = default_journal_dir() if default_journal_dir().parent.exists() else Path(tempfile.mkdtemp())
    return ChaoskitCluster(name, env, nodes, journals)


@pytest.fixture
def inject(chaoskit_cluster: ChaoskitCluster) -> Callable[..., Any]:
    return chaoskit_cluster.inject


@pytest.fixture
def run_playbook(chaoskit_cluster: ChaoskitCluster) -> Callable[..., dict[str, Any]]:
    return chaoskit_cluster.run_playbook


@pytest.fixture
def measure_hpa(chaoskit_cluster: ChaoskitCluster) -> Callable[..., MeasurementResult]:
    return chaoskit_cluster.measure_hpa


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    cluster = getattr(item, "funcargs", {}).get("chaoskit_cluster")
    if report.when != "call" or not report.failed or cluster is None:
        return
    report.sections.append(("chaoskit diagnosis after the test", cluster._diagnosis_text()))


def diagnosis_text(found: Diagnosis | None) -> str:
    """Every component that is not ok: its status, what was seen, the probable cause and what to do."""
    if found is None:
        return "no diagnosis"
    lines = []
    for r in found.reports:
        if r.status == "ok":
            continue
        lines.append(f"{r.component}@{r.subject}: {r.status}")
        for f in r.findings:
            lines.append(f"  [{f.severity}] {f.title}\n    cause: {f.probable_cause}")
            lines += [f"    do: {step}" for step in f.remediation]
    return "\n".join(lines) or "every component ok"
