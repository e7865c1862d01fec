"""The stage a run plays on: chaoskit's web workload (deployed for the run, deleted after) or the user's own objects
(found before anything is injected, put back as they were after), the load on them, and the scale-ups a step asks of
their HPA."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from pydantic import BaseModel

from chaoskit import subject as subjects
from chaoskit import workloads
from chaoskit.components import kube_proxy as kp
from chaoskit.env import Env
from chaoskit.errors import ChaoskitError, UsageError
from chaoskit.events import Emit, Said
from chaoskit.figures import seconds
from chaoskit.journal import Journal
from chaoskit.measurements.base import TargetParams
from chaoskit.model.playbook import ScaleUp
from chaoskit.model.record import RunRecord, StepRecord
from chaoskit.run.plan import StagePlan
from chaoskit.seams.nodeexec import Node
from chaoskit.seams.poll import poll

ABLE_TO_SCALE_TIMEOUT_S = 60.0  # the HPA controller syncs every 15 s; a busy host has been seen 57 s late
ROUTED_TIMEOUT_S = 30.0  # a busy node's kube-proxy syncs a new endpoint within seconds; a broken one never


@dataclass
class Stage:
    """What a run stands on and puts back; `subject` is what scaleUp and the measurements aim at once set up."""

    env: Env
    journal: Journal
    emit: Emit
    subject: subjects.Subject | None = None
    nodes: list[Node] = field(default_factory=list)  # the nodes chaoskit reaches, whose rules must route the workload

    def say(self, text: str) -> None:
        self.emit(Said(text))

    def set_up(self, stage: StagePlan, rec: RunRecord) -> None:
        """chaoskit's workload deployed, or the user's subject found (and its load started)."""
        if stage.workload is not None:
            self.deploy(stage)
            self.subject = subjects.chaoskits(stage.namespace)
        elif stage.subject is not None:
            self.subject = self.resolve_subject(stage, rec)

    def able_to_scale(self, timeout: float = ABLE_TO_SCALE_TIMEOUT_S) -> None:
        """Before any step that scales up: the HPA's own AbleToScale, so a proof that needs the HPA to act does not
        start while the HPA has not looked yet (on a busy host its first sync comes late); said when it never comes."""
        subject = self.subject
        assert subject is not None  # the playbook's rules demand a workload or a subject for a scaleUp
        # an HPA that cannot be read is the scale-up's own failure to report, not this wait's
        waited = poll(lambda: subjects.able_to_scale(self.env.kube, subject), timeout, 1.0, tolerate=(ChaoskitError,))
        if not waited.done:
            self.say(f"HPA {subject.hpa} not AbleToScale after {seconds(timeout)}; going on, its scale-up may lag")
        elif waited.seconds >= 1.0:
            self.say(f"HPA {subject.hpa} able to scale after {seconds(waited.seconds)}")

    def scale_up(self, scale_up: ScaleUp, srec: StepRecord) -> None:
        """The step's scaleUp: the subject's HPA asked for more pods now (a failure is chaoskit's, not the system's)."""
        try:
            assert self.subject is not None  # the playbook's rules demand a workload or a subject for a scaleUp
            subjects.raise_min_replicas(self.env.kube, self.subject, scale_up.min_replicas, self.journal)
        except ChaoskitError as exc:
            srec.failures.append(f"could not raise the HPA's minReplicas to {scale_up.min_replicas}: {exc}")
            return
        srec.scaled_up_at = time.time()
        self.emit(Said(f"asked the HPA for {scale_up.min_replicas} pods (minReplicas raised)", step=srec.step))

    def deploy(self, stage: StagePlan) -> None:
        w, ns = stage.workload, stage.namespace
        assert w is not None
        kube = self.env.kube
        self.own_namespace(ns)
        for obj in (
            workloads.web_deployment(ns, replicas=w.replicas, toleration_seconds=w.toleration_seconds),
            workloads.service(ns),
            workloads.hpa(
                ns, min_replicas=w.hpa.min_replicas, max_replicas=w.hpa.max_replicas, cpu_percent=w.hpa.cpu_percent
            ),
        ):
            kube.apply(obj)
        kube.wait("the web workload to be ready", lambda: workloads.ready_replicas(self.env.kube, ns) >= 1, 120)
        self.routed_from_every_node(ns)
        self.say(f"workload ready in namespace {ns}")
        if not w.load.concurrency:
            return
        time.sleep(w.load.start_after)
        url = f"http://web.{ns}.svc.cluster.local/burn?ms={w.load.burn_ms}"
        kube.apply(workloads.load_generator(ns, url, concurrency=w.load.concurrency))

    def routed_from_every_node(self, ns: str, timeout: float = ROUTED_TIMEOUT_S) -> None:
        """Wait until every node's rules lead the web Service to its pod: a probe's first request (or the load's)
        from a node whose kube-proxy has not synced the pod yet is refused, and would count against the system."""

        def routed(node: Node) -> bool:
            return poll(
                lambda: kp.endpoint_ips(self.env.nodes, node, ns, "web", workloads.PORT_NAME), timeout, 0.2
            ).done

        if not self.nodes:
            return
        with ThreadPoolExecutor(max_workers=len(self.nodes), thread_name_prefix="chaoskit-routed") as pool:
            late = [n.name for n, ok in zip(self.nodes, pool.map(routed, self.nodes), strict=True) if not ok]
        if late:  # a node's kube-proxy already broken: the run goes on, and its probes will say so
            self.say(f"the web Service is not routed from {', '.join(late)} after {seconds(timeout)}; going on")

    def resolve_subject(self, stage: StagePlan, rec: RunRecord) -> subjects.Subject:
        """The user's objects, found before anything is injected; their HPA must have room for every scaleUp."""
        assert stage.subject is not None
        found = subjects.resolve(self.env.kube, stage.subject)
        rec.subject = found.words()
        self.say(f"subject: {rec.subject}")
        if wanted := stage.scale_ups:
            low, high = subjects.hpa_bounds(self.env.kube, found)
            if bad := [n for n in wanted if not low < n <= high]:
                raise UsageError(
                    f"scaleUp minReplicas {bad[0]} must be above HPA {found.hpa}'s minReplicas ({low}) "
                    f"and at most its maxReplicas ({high})"
                )
            running = subjects.replicas(self.env.kube, found)
            if running >= min(wanted):  # e.g. still up from an earlier scale-up: the HPA scales down only after 5 min
                raise UsageError(
                    f"scaleUp minReplicas {min(wanted)}: {found.kind} {found.namespace}/{found.name} "
                    f"runs {running} replicas already, so nothing would scale up; wait for its HPA to "
                    "scale it down, or ask for more"
                )
        if (load := stage.subject.load) is not None:
            self.load(stage.namespace, subjects.service_url(self.env.kube, found.namespace, load), load.concurrency)
        return found

    def aimed(self, params: BaseModel) -> BaseModel:
        """A measurement's target defaults to the subject's objects (chaoskit's workload: already its defaults)."""
        if self.subject is None or self.subject.ours or not isinstance(params, TargetParams):
            return params
        given, s = params.model_fields_set, self.subject
        update = {
            "namespace": s.namespace,
            "deployment": s.name,
            "kind": s.kind,
            "hpa": s.hpa or "",
            "service": s.service or "",
            "first_request": False,
        }  # (your Service does not answer with its pod's name)
        return params.model_copy(update={k: v for k, v in update.items() if k not in given})

    def own_namespace(self, ns: str) -> None:
        """chaoskit's namespace for the run, made once an earlier run's copy is gone (nothing can be created in a
        terminating namespace)."""
        kube = self.env.kube
        kube.wait(f"namespace {ns} of an earlier run to be deleted", lambda: not workloads.terminating(kube, ns), 180)
        kube.apply(workloads.namespace(ns))

    def load(self, ns: str, url: str, concurrency: int) -> None:
        self.own_namespace(ns)
        self.env.kube.apply(workloads.load_generator(ns, url, concurrency=concurrency))
        self.say(f"load: {concurrency} request loop(s) on {url}")

    def put_back(self, rec: RunRecord) -> None:
        """What the run changed of the user's objects, as it was (a failure leaves it to `chaoskit revert`)."""
        try:
            for what in subjects.put_back(self.env.kube, self.journal):
                self.say(f"put back: {what}")
        except ChaoskitError as exc:
            rec.errors.append(f"could not put back what the run changed (chaoskit revert retries): {exc}")
            rec.settle("error")

    def clean_up(self, namespace: str) -> None:
        try:
            self.env.kube.delete(f"/api/v1/namespaces/{namespace}")
        except ChaoskitError as exc:
            self.say(f"could not delete namespace {namespace}: {exc}")
