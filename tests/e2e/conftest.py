"""e2e fixtures: the real kind cluster `chaoskit cluster up` builds, and a fresh namespace per test.

Set CHAOSKIT_KEEP_ON_FAIL=1 to keep a failed test's namespace for inspection.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import pytest

from chaoskit import workloads
from chaoskit.checks.cluster import ClusterHealthy
from chaoskit.components import controller_manager
from chaoskit.components.controller_manager.workqueues import backed_up
from chaoskit.diagnosers.controller_manager.evidence import ControllerManagerParams
from chaoskit.env import Env
from chaoskit.journal import state_home
from chaoskit.model.moments import epoch
from chaoskit.model.params import NoParams
from chaoskit.safety import INSTALLED
from chaoskit.seams.kube import Kube
from chaoskit.seams.nodeexec import DockerNodeExec, named
from chaoskit.seams.poll import poll
from chaoskit.seams.scrape import Metrics, scrape_command
from chaoskit.seams.shell import SubprocessRunner
from tests.e2e import radius, timing
from tests.e2e.catalog import Catalog, run_catalog
from tests.e2e.radius import Registry

CLUSTER = os.environ.get("CHAOSKIT_CLUSTER", "chaoskit")


# a chaoskit the tests give up on dumps every thread's stack on the SIGABRT `finished` sends it
os.environ.setdefault("PYTHONFAULTHANDLER", "1")


def took(sample: Mapping[str, Any]) -> float:
    """A JSON record's stage sample: seconds from its start to its end (RFC 3339 moments, or an older epoch's)."""
    return (epoch(sample["end"]) or 0.0) - (epoch(sample["start"]) or 0.0)


def finished(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """stdout and stderr of a chaoskit that ends within `timeout`; else the test fails showing where it hung."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        _, stderr = proc.communicate(timeout=60)  # a child it left (a docker exec) may hold the pipes a while
        pytest.fail(
            f"chaoskit {' '.join(map(str, proc.args[3:]))} still ran after {timeout:.0f}s; "  # type: ignore[index]
            f"where its threads were:\n{stderr[-8000:]}"
        )


def chaoskit(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    """Run the real CLI as a user would."""
    argv = [sys.executable, "-m", "chaoskit", *args]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = finished(proc, timeout)
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


# this host's disk in a slow spell: warnings a diagnosis rightly gives, which no fault causes
HOST_DISK = re.compile(r"etcd's disk is slow|the API server's etcd requests are slow|API requests are slow")
HOST_OWNED = re.compile(r"^(host/|component/etcd$|etcd/)")  # the host, or etcd (named etcd/<its node>)


def of_the_host(finding: Mapping[str, Any]) -> bool:
    """A warning of a slow spell that the diagnosis itself lays on the host: etcd's own measured latency, or a slow
    API its diagnosis found caused by etcd or the host's CPU. A slow API nothing explains is no excuse."""
    if not HOST_DISK.search(finding["title"]):
        return False
    return finding["component"] == "etcd" or bool(HOST_OWNED.match(finding.get("caused_by") or ""))


LAST = "tests/e2e/test_in_cluster.py"  # breaks the API server through the operator: its crash-loop back-off of the
# controller manager and scheduler (growing with every outage within 10 min) would land in the tests after it


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(timing, "chaoskit-e2e-timing")  # where the time went, printed at the end
    if not hasattr(config, "workerinput") and not config.option.collectonly:  # the controller, or a run without workers
        if getattr(config.option, "testrunuid", "") is None:
            config.option.testrunuid = RUN_ID  # xdist hands it to every worker: one SHARED for the session
        config.stash[SESSION_LOCK] = one_e2e_session_at_a_time()
        Registry().reset()
        for earlier in SHARED.parent.glob("*"):  # what earlier sessions shared: none of them runs now
            if earlier != SHARED:
                shutil.rmtree(earlier, ignore_errors=True)


SESSION_LOCK = pytest.StashKey[IO[str]]()
RUN_ID = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex  # one per session, shared by its workers
SHARED = state_home() / "e2e-shared" / RUN_ID  # what the session's workers make once and read alike


def one_e2e_session_at_a_time() -> IO[str]:
    """e2e sessions share the one cluster and break each other's faults: a host-wide lock serialises them (held
    until the controller's process ends)."""
    path = state_home() / "e2e.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"another e2e session holds {path}; waiting for it", file=sys.stderr)
        fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    """The test holds what it touches from before its setup to after its teardown, so tests side by side never meet;
    a module marked `one_hold` holds it from its first test's setup to its last test's teardown (its module fixtures
    keep things broken between its tests). The first test to need the session's catalog run holds the whole cluster
    for it."""
    module = item.get_closest_marker("one_hold") and getattr(item, "module", None)
    mates = [i for i in item.session.items if getattr(i, "module", None) is module] if module else [item]
    touched = tuple(dict.fromkeys(t for i in mates for t in radius.of(i)))
    if "catalog" in getattr(item, "fixturenames", ()) and not (SHARED / "catalog.json").exists():
        touched = (*touched, radius.CLUSTER)
    last = module is None or nextitem is None or getattr(nextitem, "module", None) is not module
    if module is not None and module.__name__ in HELD:
        item.user_properties.append(("chaoskit-radius", f"{radius.words(touched)}, held by its module"))
        hold = HELD[module.__name__]
    else:
        hold = contextlib.ExitStack()
        waited = hold.enter_context(Registry().holding(item.nodeid, touched))
        item.user_properties.append(("chaoskit-radius", radius.words(touched)))
        item.user_properties.append(("chaoskit-waited-for-radius", waited))
        if module is not None:
            HELD[module.__name__] = hold  # released after the module's last test
    try:
        return (yield)
    finally:
        if last:
            with hold:  # left once its last test is done, the cluster healthy again if it broke it
                if module is not None:
                    HELD.pop(module.__name__, None)
                if any(t.how == "breaks" and t.radius.scope != "namespace" for t in touched):
                    healthy_again(item)  # a node's component too: a kubelet back from a stop is not Ready at once


def healthy_again(item: pytest.Item, timeout: float = 240.0) -> None:
    """A test that broke the cluster leaves its radius only once the cluster is healthy again (the control plane's
    crash-loop back-off after an outage, say), so what it left healing never lands in the test after it; it says so
    when the cluster is not."""
    env = Env.for_kind(Kube.connect(context=f"kind-{CLUSTER}"), CLUSTER)

    def drained() -> bool:  # e.g. 2,000 Services deleted: the endpoint controller works its queue for a while after
        out = env.nodes.run(
            named(f"{CLUSTER}-control-plane"),
            ["sh", "-c", scrape_command(controller_manager.METRICS_URL, ("workqueue_depth",), client_cert=True)],
            check=False,
            timeout=30,
        ).stdout
        return not backed_up(Metrics.parse(out), ControllerManagerParams().max_queue_depth)

    if not poll(lambda: ClusterHealthy().run(env, NoParams()).ok and drained(), timeout, 2.0).done:
        print(f"\n{item.nodeid} left the cluster unhealthy for {timeout:.0f}s after it", file=sys.stderr)


HELD: dict[str, contextlib.ExitStack] = {}  # the radius a one_hold module holds across its tests


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)
    items.sort(key=lambda item: str(item.fspath).endswith(LAST))  # stable: every other test keeps its place


def process_state(node: str, process: str) -> str:
    """The ps state letter of `process` on kind node `node` ("T": stopped); "" when it is not running."""
    out = DockerNodeExec(SubprocessRunner()).run(
        named(node), ["sh", "-c", f"ps -o stat= -p $(pgrep -x {process} | head -n1)"], check=False
    )
    return out.stdout.strip()[:1]


@pytest.fixture(scope="session")
def cluster() -> str:
    """Bring the cluster up (a reuse when `make test` already did) and return its name: once per session, whichever
    worker asks first."""
    with once("cluster-up") as done:
        if not done.exists():
            up = chaoskit("cluster", "up", "--cluster", CLUSTER)
            assert up.returncode == 0, f"cluster up failed:\n{up.stderr[-3000:]}"
            done.write_text(CLUSTER)
    return CLUSTER


@contextlib.contextmanager
def once(name: str) -> Iterator[Path]:
    """A file the session's workers make once: held under a lock while the first of them makes it."""
    SHARED.mkdir(parents=True, exist_ok=True)
    with (SHARED / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield SHARED / f"{name}.json"


@pytest.fixture(scope="session")
def kube(cluster: str) -> Kube:
    return Kube.connect(context=f"kind-{cluster}")


@pytest.fixture(scope="session")
def catalog(kube: Kube, cluster: str, tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    """The shipped catalog, run once per session with every registered observer (see tests/e2e/catalog.py), by the
    first worker to need it (its test holds the whole cluster); the others read what it saw."""
    with once("catalog") as saved:
        if saved.exists():
            return Catalog.load(saved)
        done = run_catalog(Env.for_kind(kube, cluster), tmp_path_factory.mktemp("catalog"))
        done.save(saved)
    assert done.record, done.stderr[-3000:]
    took = (epoch(done.record["finished_at"]) or 0.0) - (epoch(done.record["started_at"]) or 0.0)  # RFC 3339
    lines = [
        f"the catalog ({len(done.record['runs'])} playbooks) took {took:.0f}s (exit {done.returncode}); per playbook:"
    ]
    lines += [
        f"  {r['playbook']:44s} {r['verdict']:9s} {r['started_s']:7.1f}s → {r['finished_s']:7.1f}s ({r['radius']})"
        for r in done.record["runs"]
    ]
    (SHARED / "catalog.txt").write_text("\n".join(lines))  # printed at the end of the session, wherever it ran
    return done


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if (SHARED / "catalog.txt").exists():
        terminalreporter.section("chaoskit run playbooks/")
        terminalreporter.write_line((SHARED / "catalog.txt").read_text())


# An e2e test is never skipped, unless what it needs is a fact of the host (a kernel without ip_vs, say): such a skip
# says so by starting its reason with this, and the log prints it (-rs). Any other skip fails the test.
HOST_FACT = "host fact: "


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    report = yield
    if (
        report.skipped
        and isinstance(report.longrepr, tuple)
        and not str(report.longrepr[2]).startswith(f"Skipped: {HOST_FACT}")
    ):
        report.outcome = "failed"
        report.longrepr = f"e2e tests are never skipped; this one was, naming no fact of the host: {report.longrepr[2]}"
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture
def ns(kube: Kube, request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"e2e-{request.node.name.replace('_', '-')[:40].strip('-')}-{uuid.uuid4().hex[:5]}".lower()
    kube.apply(workloads.namespace(name))
    yield name
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    if failed and os.environ.get("CHAOSKIT_KEEP_ON_FAIL"):
        print(f"keeping namespace {name} of failed test")
        return
    kube.delete(f"/api/v1/namespaces/{name}")
    # gone before the test lets its radius go: a Service left without endpoints while it terminates is a symptom
    # another test's whole-cluster look would see
    kube.wait(f"namespace {name} to be deleted", lambda: kube.find(f"/api/v1/namespaces/{name}") is None, 180)


@pytest.fixture
def not_installed(kube: Kube, cluster: str) -> Iterator[None]:
    """The cluster without a `chaoskit install` for the test (an install is recognised as an opt-in), put back as
    the test found it."""
    before = kube.find(INSTALLED) is not None
    if before:
        assert chaoskit("uninstall", "--cluster", cluster, timeout=300).returncode == 0
    try:
        yield
    finally:
        if before:
            assert chaoskit("install", "--cluster", cluster, timeout=900).returncode == 0
