"""A run planned once: a playbook resolved against the cluster's nodes and the catalog into everything the runner,
the suite and the dry run read. The steps come with their typed params, nodes, locks and deadlines, in the groups
that run together. The plan also holds the steady-state checks, the measurements and thresholds, the probes (with the
node each asks from), the stage, and what the run changes in the whole cluster. Nothing after the plan reads the
playbook."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from pydantic import BaseModel

from chaoskit.checks.base import Check
from chaoskit.measurements.base import Measurement
from chaoskit.model.playbook import Playbook, Subject, Threshold, Workload
from chaoskit.model.probes import Probe
from chaoskit.registry import CATALOG, Catalog
from chaoskit.seams.nodeexec import Node, pick
from chaoskit.step import ResolvedStep, resolve_groups


@dataclass(frozen=True)
class PlannedCheck:
    """A steady-state check, its params validated once."""

    name: str
    check: type[Check]
    params: BaseModel
    timeout: float

    @property
    def judges_nodes(self) -> bool:
        """Whether it judges nodes: the nodes another run of the suite is breaking are then left out."""
        return "except_nodes" in type(self.params).model_fields


@dataclass(frozen=True)
class PlannedMeasurement:
    """A measurement, its params validated once (its target is aimed at the run's subject when it starts)."""

    name: str  # the id thresholds refer to
    kind: str  # its type in the catalog, e.g. hpa_scale_up
    measurement: type[Measurement]
    params: BaseModel
    every_node: frozenset[str] = frozenset()  # node components it times on every node


@dataclass(frozen=True)
class PlannedProbe:
    """A probe, and the node an http probe asks from (None: wherever its pod is scheduled)."""

    probe: Probe
    node: str | None = None


@dataclass(frozen=True)
class StagePlan:
    """What the run stands on: chaoskit's workload or your subject, in chaoskit's namespace for the run."""

    namespace: str
    workload: Workload | None = None
    subject: Subject | None = None
    scale_ups: tuple[int, ...] = ()  # the minReplicas each step's scaleUp asks of the HPA, in step order


@dataclass(frozen=True)
class ClusterChanges:
    """What the run changes in the whole cluster before its workload, each put back after the run."""

    kube_proxy_mode: str | None = None  # every kube-proxy switched to this mode
    simulated_nodes: int | None = None  # this many simulated (kwok) nodes

    @property
    def any(self) -> bool:
        return self.kube_proxy_mode is not None or self.simulated_nodes is not None


@dataclass(frozen=True)
class RunPlan:
    """One playbook's run, decided: what the runner plays, the suite schedules and the dry run shows."""

    name: str
    cluster: str
    groups: tuple[tuple[ResolvedStep, ...], ...]  # in order, each the steps that run together
    stage: StagePlan
    steady_state: tuple[PlannedCheck, ...] = ()
    measurements: tuple[PlannedMeasurement, ...] = ()
    thresholds: tuple[Threshold, ...] = ()
    probes: tuple[PlannedProbe, ...] = ()
    changes: ClusterChanges = ClusterChanges()
    diagnose: bool = True

    @property
    def namespace(self) -> str:
        return self.stage.namespace

    @property
    def steps(self) -> tuple[ResolvedStep, ...]:
        """Every fault step, those of concurrent groups included, in order."""
        return tuple(s for group in self.groups for s in group)

    @property
    def locks(self) -> list[str]:
        """What the run's steps break, each once."""
        return sorted({s.lock for s in self.steps})

    @property
    def every_node(self) -> frozenset[str]:
        """Node components its measurements time on every node: a fault on any node's one lands in their figures."""
        return frozenset[str]().union(*(m.every_node for m in self.measurements))

    @property
    def owns_namespace(self) -> bool:
        """Whether the run makes chaoskit's namespace (its workload, a subject's load, the probes' pods)."""
        s = self.stage
        return s.workload is not None or bool(s.subject and s.subject.load) or bool(self.probes)


def plan(pb: Playbook, nodes: Sequence[Node], catalog: Catalog = CATALOG) -> RunPlan:
    """The playbook resolved once against the cluster's `nodes` and the `catalog` its names are looked up in."""
    spec = pb.spec
    groups = resolve_groups(spec.steps, nodes, catalog.faults)
    return RunPlan(
        name=pb.name,
        cluster=spec.cluster,
        groups=tuple(tuple(g) for g in groups),
        stage=StagePlan(
            spec.namespace,
            spec.workload,
            spec.subject,
            tuple(s.scale_up.min_replicas for s in spec.fault_steps() if s.scale_up is not None),
        ),
        steady_state=tuple(
            PlannedCheck(
                c.check,
                cast(type[Check], catalog.checks.get(c.check)),
                catalog.checks.params_model(c.check).model_validate(c.params),
                c.timeout,
            )
            for c in spec.steady_state
        ),
        measurements=tuple(_measurement(catalog, m.name, m.type, m.params) for m in spec.measurements),
        thresholds=tuple(spec.thresholds),
        probes=tuple(PlannedProbe(p, _asks_from(p, nodes)) for p in spec.probes),
        changes=ClusterChanges(spec.kube_proxy_mode, spec.simulated_nodes),
        diagnose=spec.diagnose,
    )


def _measurement(catalog: Catalog, name: str, kind: str, params: dict[str, object]) -> PlannedMeasurement:
    found = catalog.measurements.get(kind)
    every_node: frozenset[str] = getattr(found, "every_node", frozenset())
    typed = catalog.measurements.params_model(kind).model_validate(params)
    return PlannedMeasurement(name, kind, cast(type[Measurement], found), typed, every_node)


def _asks_from(probe: Probe, nodes: Sequence[Node]) -> str | None:
    """The node an http probe asks from: a name, or a role's first node by name (a worker's when it is "any")."""
    if probe.http is None or not probe.http.node:
        return None
    return pick(nodes, probe.http.node, "worker").name
