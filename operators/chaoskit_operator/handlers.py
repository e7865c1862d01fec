"""kopf handlers. One daemon per ChaosExperiment runs its playbook once with chaoskit's Runner, the same engine as
`chaoskit run`, and writes the outcome into the resource's status and events.

Why a daemon and not an on.create handler: kopf stops a daemon when its resource is deleted (or the operator
exits) and holds the resource's finalizer until the daemon returns, so deleting a ChaosExperiment mid-fault stops
the run, reverts every fault, and only then lets the resource go.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kopf

from chaoskit.cluster.experiments import FINAL, FINALIZER
from chaoskit.cluster.install import NAMESPACE, operator_available
from chaoskit.deadman import fire
from chaoskit.engine import RevertOutcome, revert_journal
from chaoskit.env import Env, Via, connect
from chaoskit.errors import ChaoskitError
from chaoskit.events import Event, line
from chaoskit.journal import Journal
from chaoskit.model.playbook import Playbook
from chaoskit.model.record import RunRecord
from chaoskit.run.plan import plan
from chaoskit.runner import Runner
from chaoskit.safety import recognise
from chaoskit.seams.kube import Kube, KubeError
from chaoskit.seams.shell import Runner as Shell
from chaoskit_operator.experiment import (
    GROUP,
    PLURAL,
    VERSION,
    Invalid,
    final_status,
    interrupted_status,
    invalid_status,
    playbook_of,
    resource_path,
    running_status,
)
from chaoskit_operator.journals import Mirror, configmap_name, restore

registry = kopf.OperatorRegistry()
STANDING_BY = "standing by"  # what an operator beside an install logs while the installed one acts
STAND_BY_S = 5.0  # how often it looks whether the installed operator is still there


@dataclass(frozen=True)
class Config:
    """What `chaoskit-operator` was started with; handed to the handlers through kopf's memo."""

    kube: Kube
    shell: Shell
    journal_dir: Path
    allow_any_cluster: bool = False
    agent_tls: Path | None = None  # in the cluster: the nodes are reached through the agents with this client pair
    namespaced: bool = False  # restricted to some namespaces (-n)

    def env(self, cluster: str) -> Env:
        """The seams of a run: the agents in the cluster, `docker exec` beside a kind cluster on this host."""
        via: Via = "agent" if self.agent_tls is not None else "docker"
        return connect(cluster, via=via, kube=self.kube, runner=self.shell, agent_tls=self.agent_tls)


@kopf.on.startup(registry=registry)
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=GROUP)
    settings.posting.level = logging.INFO  # the level of our progress events (kopf.info) too


@kopf.on.startup(registry=registry)
async def stand_by(memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    """kopf's peering meets operators of one scope only: one restricted to namespaces (a KopfPeering there) never
    meets the installed, cluster-wide one (the ClusterKopfPeering). Such an operator beside an install stands by
    until the installed operator is gone, so no experiment is taken by two."""
    config: Config = memo.config
    if config.agent_tls is not None or not config.namespaced:
        return  # the installed one, or one cluster-wide: kopf's peering decides (the installed one's priority wins)
    waited = False
    while _installed_operator_acts(config.kube):
        if not waited:
            logger.info(
                f"{STANDING_BY}: the installed operator ({NAMESPACE}/chaoskit-operator) acts on every namespace"
            )
            waited = True
        await asyncio.sleep(STAND_BY_S)
    if waited:
        logger.info("the installed operator is gone: acting on this operator's namespaces now")


def _installed_operator_acts(kube: Kube) -> bool:
    try:
        return operator_available(kube)
    except KubeError:
        return False  # no answer: kopf's own start says so next


@kopf.on.login(registry=registry)
def login(memo: kopf.Memo, **kwargs: Any) -> kopf.ConnectionInfo | None:
    """The operator talks to the cluster it was pointed at (--kubeconfig/--context), or the one it runs in."""
    if memo.config.agent_tls is not None:
        return kopf.login_with_service_account(**kwargs)
    c = memo.config.kube.api.configuration
    token = (c.api_key or {}).get("authorization", "").split(" ", 1)[-1].strip() or None
    return kopf.ConnectionInfo(
        server=c.host,
        ca_path=c.ssl_ca_cert,
        insecure=not c.verify_ssl,
        token=token,
        certificate_path=c.cert_file,
        private_key_path=c.key_file,
    )


# cancellation_polling: how often kopf looks whether a daemon it stopped (the experiment was deleted) has ended, to let
# go of the finalizer; kopf's 60 s default held a deleted experiment that long after its revert was done
@kopf.daemon(GROUP, VERSION, PLURAL, registry=registry, cancellation_polling=1)
def experiment(
    stopped: kopf.DaemonStopped,
    body: kopf.Body,
    name: str,
    namespace: str | None,
    uid: str,
    memo: kopf.Memo,
    logger: kopf.Logger,
    **_: Any,
) -> None:
    """Run the playbook once; a resource whose status is final was run already and is left as it is."""
    cfg: Config = memo.config
    status = dict(body.get("status") or {})
    assert namespace is not None  # the CRD is namespaced
    path = resource_path(namespace, name)
    if status.get("phase") in FINAL:
        return
    pb = playbook_of(dict(body))
    if status.get("phase") == "Running" and not isinstance(pb, Invalid):  # the operator died mid-run
        run = status.get("journal", "")
        journal_path = Path(run)
        if not journal_path.is_file():  # another pod's disk: the cluster's copy is what is left
            journal_path = cfg.journal_dir / f"{namespace}-{name}-{uid[:8]}.recovered.jsonl"
            restore(cfg.kube, namespace, name, uid, journal_path)
        _recover(cfg, body, path, pb.spec.cluster, journal_path, run)
        return
    if isinstance(pb, Invalid):
        _patch(cfg, path, invalid_status(pb))
        kopf.warn(body, reason="Invalid", message=f"nothing injected: {pb.message}"[:1000])
        return
    mirror = Mirror(cfg.kube, namespace, name, uid)
    journal = Journal(cfg.journal_dir / f"{namespace}-{name}-{uid[:8]}.jsonl", on_append=mirror)
    _patch(cfg, path, running_status(str(journal.path), _now(), configmap_name(name, uid)))
    try:
        record = _run(cfg, pb, journal, stopped, body, path)
    except ChaoskitError as exc:  # refused before the Runner started (not our cluster, no nodes)
        record = RunRecord(pb.name, pb.spec.cluster, pb.spec.namespace, str(journal.path), "", 0.0)
        record.verdict, record.errors = "error", [str(exc)]
    finally:
        mirror.close()
    final = final_status(record, _now())
    _patch(cfg, path, final)
    event = kopf.info if record.verdict == "passed" else kopf.warn
    event(body, reason=final["phase"], message=final["message"])
    logger.info(f"{name}: {record.verdict}")


def _run(
    cfg: Config, pb: Playbook, journal: Journal, stopped: kopf.DaemonStopped, body: kopf.Body, path: str
) -> RunRecord:
    """The Runner in a thread of its own, so this one can relay its progress and pass on a stop at any time."""
    if not cfg.allow_any_cluster and cfg.agent_tls is None:  # installed in the cluster: the install was the opt-in
        recognise(cfg.shell, cfg.kube, pb.spec.cluster)
    env = cfg.env(pb.spec.cluster)
    happened: queue.Queue[Event] = queue.Queue()
    nodes = env.nodes.list_nodes()
    run = plan(pb, nodes)  # a step that cannot be placed is refused here, before the Runner starts
    runner = Runner(env, nodes, journal, happened.put)
    done: list[RunRecord] = []
    worker = threading.Thread(target=lambda: done.append(runner.run(run)), name=f"run-{pb.name}", daemon=True)
    worker.start()
    while worker.is_alive() or not happened.empty():
        if stopped and not runner.stop.is_set():
            runner.stop.set()  # deleted, or the operator is exiting: the Runner reverts and returns
            kopf.warn(body, reason="Stopping", message=f"{stopped.reason}: reverting every injected fault")
        try:
            event = happened.get(timeout=0.5)
        except queue.Empty:
            continue
        message = line(event)
        kopf.info(body, reason=event.reason, message=message[:1000])
        _patch(cfg, path, {"message": message[:1000]}, retry_for=0)  # best effort: the fault may be the API server
    worker.join()
    return done[0]


def _recover(cfg: Config, body: kopf.Body, path: str, cluster: str, journal_path: Path, run: str) -> None:
    """Finish what the lost run's journal left open: revert it, release its locks, mark it Interrupted. With no
    journal left anywhere, the switches the run (`run`: its journal's path) armed on the nodes are fired now."""
    outcome, fired = RevertOutcome(), []
    if journal_path.is_file():
        outcome = revert_journal(cfg.env(cluster), Journal(journal_path))
    elif run:
        env = cfg.env(cluster)
        fired = [i for n in env.nodes.list_nodes() for i in fire(env.nodes, n, run)]
    _patch(cfg, path, interrupted_status(outcome, _now(), fired))
    message = f"operator restarted mid-run; reverted {len(outcome.reverted)} fault(s)"
    if outcome.left:
        message += f", {len(outcome.left)} left to their dead-man switches"
    if outcome.held:
        message += f", {len(outcome.held)} still holding though journaled reverted"
    if fired:
        message += f"; no journal left: fired {len(fired)} dead-man switch(es) the run armed"
    kopf.warn(body, reason="Interrupted", message=message)


def _patch(cfg: Config, path: str, status: dict[str, Any], retry_for: float = 120) -> None:
    """Merge `status` into the resource's, retrying while the API server is away (an experiment may stop it)."""
    try:
        cfg.kube.wait(
            f"the status of {path}",
            lambda: cfg.kube.patch(f"{path}/status", {"status": status}) or True,
            retry_for,
            interval=2,
        )
    except KubeError as exc:
        if retry_for:
            raise
        logging.getLogger(__name__).info(f"status not updated: {exc}")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
