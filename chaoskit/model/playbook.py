"""The playbook format, `chaoskit.dev/v1alpha1` `Playbook`: pydantic models, camelCase in YAML, snake_case in Python.

Models are frozen and refuse unknown fields. Defaults that depend on other fields (a step's name and deadline, the
namespace) are filled in during validation, so a validated Playbook never holds "not given".
"""

# Over 300 lines: the playbook format as one schema: every model a user's YAML is checked against.

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Field, Tag, model_validator

from chaoskit.model import rules
from chaoskit.model.base import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    KIND_CLUSTER_NAME,
    STEP_NAME,
    URL_PATH,
    Model,
    drop_default,
    raise_rule_problems,
)
from chaoskit.model.duration import Duration, PositiveDuration
from chaoskit.model.kwok import MAX_SIMULATED_NODES
from chaoskit.model.limits import DEFAULT_MAX_HOLD, DEFAULT_MAX_STEPS, limit_problems
from chaoskit.model.probes import Probe

API_VERSION = "chaoskit.dev/v1alpha1"
KIND = "Playbook"
DEFAULT_CLUSTER = "chaoskit"

Stat = Literal["p50", "p90", "p99", "max", "mean", "count"]
Role = Literal["control-plane", "worker", "any"]
ROLES: tuple[Role, ...] = ("control-plane", "worker", "any")

# tags of the steps union; capitalised so they never collide with a camelCase YAML key in an error's location
FAULT_STEP_TAG = "FaultStep"
CONCURRENT_STEP_TAG = "ConcurrentStep"
UNION_TAGS = frozenset({FAULT_STEP_TAG, CONCURRENT_STEP_TAG})


def _set(model: BaseModel, field: str, value: object) -> None:
    object.__setattr__(model, field, value)  # filling a derived default on a model still being validated


RawParams = Annotated[
    dict[str, Any],
    Field(description="Parameters, validated against the params model of the named fault, check or measurement."),
]


class Metadata(Model):
    """Who the playbook is."""

    name: str = Field(max_length=63, pattern=DNS_LABEL, description="The playbook's name, a DNS-1123 label.")
    description: str = Field(default="", description="What the playbook does, for people.")


class Target(Model):
    """Where a fault lands."""

    node: str = Field(
        max_length=253,
        pattern=DNS_SUBDOMAIN,
        description='A node name, a role ("control-plane" or "worker": one node of that role), or "any".',
    )

    @property
    def role(self) -> Role | None:
        """The role asked for, or None when `node` names one node."""
        return next((r for r in ROLES if r == self.node), None)


class ScaleUp(Model):
    """A scale-up at a known moment: the workload HPA's minReplicas raised, whatever the load does."""

    min_replicas: int = Field(ge=2, le=100, description="The HPA's minReplicas from then on, for the rest of the run.")
    at: Literal["effect", "recovered"] = Field(
        default="effect",
        description="effect: as soon as the fault's effect shows; recovered: once its component is healthy again "
        "after the revert.",
    )


class FaultStep(Model):
    """Inject one fault, hold it for `duration`, revert it."""

    name: str = Field(
        default="",
        max_length=63,
        pattern=STEP_NAME,
        description='Unique step name; default "<position>-<fault>": "1-scheduler.down", "2.1-kube-proxy.freeze".',
        json_schema_extra=drop_default,
    )
    fault: str = Field(description='A fault from the catalog, "<component>.<fault>", e.g. scheduler.down.')
    target: Target | None = Field(default=None, description="Where to inject; may be omitted for cluster-wide faults.")
    params: RawParams = Field(default_factory=dict)
    duration: PositiveDuration = Field(
        description="How long the fault is held, from when it is in place (its apply lines done), before the revert."
    )
    deadline: Duration = Field(
        default=0.0,
        description="Dead-man switch, counted from injection: the node heals itself by then even if chaoskit dies. "
        "Must exceed duration; default: the longer of duration and the fault's effect timeout, + 60s.",
        json_schema_extra=drop_default,
    )
    after: Duration = Field(default=0.0, description="Wait this long before injecting.")
    weight: float = Field(default=1.0, ge=0, le=100, description="Its weight in the resilience score.")
    scale_up: ScaleUp | None = Field(
        default=None,
        description="Ask the HPA of the workload or subject for more pods during this step.",
        json_schema_extra=drop_default,
    )

    @model_validator(mode="after")
    def _deadline(self) -> FaultStep:
        raise_rule_problems(rules.step_problems(self.model_dump(exclude_unset=True)))
        if "deadline" not in self.model_fields_set:
            _set(self, "deadline", self.duration + rules.DEFAULT_DEADLINE_MARGIN)
        return self


class ConcurrentStep(Model):
    """Fault steps that run together; the step after waits for all of them."""

    concurrent: list[FaultStep] = Field(min_length=1, description="The fault steps to run together.")


def _step_kind(value: Any) -> str:
    # called with raw data when validating and with a model when serializing
    concurrent = isinstance(value, ConcurrentStep) or (isinstance(value, dict) and "concurrent" in value)
    return CONCURRENT_STEP_TAG if concurrent else FAULT_STEP_TAG


Step = Annotated[
    Annotated[FaultStep, Tag(FAULT_STEP_TAG)] | Annotated[ConcurrentStep, Tag(CONCURRENT_STEP_TAG)],
    Discriminator(_step_kind),
]


class Check(Model):
    """A steady-state check: must pass before the first step and after the last revert."""

    check: str = Field(description="A check from the catalog, e.g. nodes-ready.")
    params: RawParams = Field(default_factory=dict)
    timeout: PositiveDuration = Field(default=60.0, description="How long the check may take to pass.")


class Hpa(Model):
    """The HorizontalPodAutoscaler on the test workload."""

    min_replicas: int = Field(default=rules.HPA_MIN_REPLICAS, ge=1, le=100, description="HPA minReplicas.")
    max_replicas: int = Field(default=rules.HPA_MAX_REPLICAS, ge=1, le=100, description="HPA maxReplicas.")
    cpu_percent: int = Field(
        default=50, ge=1, le=1000, description="Target average CPU utilisation, percent of requests."
    )

    @model_validator(mode="after")
    def _range(self) -> Hpa:
        raise_rule_problems(rules.hpa_problems(self.model_dump()))
        return self


class Load(Model):
    """The load generator that drives the workload's CPU."""

    concurrency: int = Field(
        default=4,
        ge=0,
        le=256,
        description="Parallel request loops; 0: no load generator (a step's scaleUp alone asks the HPA for pods).",
    )
    burn_ms: int = Field(
        default=50, ge=0, le=10_000, description="CPU milliseconds each request burns in the web pods."
    )
    start_after: Duration = Field(
        default=0.0, description="Wait this long after the workload is ready before loading it."
    )


class Workload(Model):
    """chaoskit's test workload: a web Deployment, its Service, an HPA and a load generator."""

    replicas: int = Field(default=1, ge=1, le=100, description="Initial replicas of the web Deployment.")
    hpa: Hpa = Field(default_factory=Hpa, description="The HPA on the web Deployment.")
    load: Load = Field(default_factory=Load, description="The load generator.")
    toleration_seconds: int | None = Field(
        default=None,
        ge=0,
        le=3600,
        description="How long the web pods stay bound to a node that is unreachable or not ready before the node "
        "controller evicts them (default: 300 s, which the DefaultTolerationSeconds admission plugin gives every pod).",
    )


class SubjectLoad(Model):
    """chaoskit's load generator (in chaoskit's namespace) sending requests to one of your Services."""

    service: str = Field(max_length=63, pattern=DNS_LABEL, description="The Service, in the subject's namespace.")
    port: int | None = Field(default=None, ge=1, le=65535, description="Its port; default: its first.")
    path: str = Field(default="/", pattern=URL_PATH, description="The request path (and query), e.g. /?item=tea.")
    concurrency: int = Field(default=4, ge=1, le=256, description="Parallel request loops.")


class Subject(Model):
    """Your own system under test: a Deployment or StatefulSet with its HPA and Service. chaoskit creates and deletes
    nothing of it; what it changes to drive the test (the HPA's minReplicas, for a step's scaleUp) it records in the
    run's journal and restores after the run (or `chaoskit revert` does)."""

    namespace: str = Field(max_length=63, pattern=DNS_LABEL, description="Where your objects are.")
    deployment: str | None = Field(
        default=None, max_length=253, pattern=DNS_SUBDOMAIN, description="Your Deployment, by name."
    )
    stateful_set: str | None = Field(
        default=None, max_length=253, pattern=DNS_SUBDOMAIN, description="Or your StatefulSet, by name."
    )
    selector: dict[str, str] | None = Field(
        default=None, description="Or labels that select exactly one Deployment in the namespace."
    )
    hpa: str | None = Field(
        default=None, description="Its HorizontalPodAutoscaler; default: the one whose scaleTargetRef names it."
    )
    service: str | None = Field(
        default=None, description="The Service in front of it; default: the one whose selector matches its pods."
    )
    load: SubjectLoad | None = Field(default=None, description="Drive CPU through one of your Services.")

    @model_validator(mode="after")
    def _one_workload(self) -> Subject:
        raise_rule_problems(rules.subject_problems(self.model_dump()))
        return self


class MeasurementRef(Model):
    """A measurement taken while the steps run."""

    name: str = Field(max_length=63, pattern=DNS_LABEL, description="Unique id that thresholds refer to.")
    type: str = Field(description="A measurement from the catalog, e.g. hpa_scale_up.")
    params: RawParams = Field(default_factory=dict)


class Threshold(Model):
    """A limit on a measurement's statistic; a breach is a verdict (exit 1), never an error."""

    measurement: str = Field(description="The name of a measurement in spec.measurements.")
    stat: Stat = Field(description="The statistic compared: p50, p90, p99, max, mean or count.")
    stage: str | None = Field(
        default=None, description="One stage of the measurement (e.g. scheduled); default: end to end."
    )
    max: Duration | None = Field(default=None, description="Breached when the statistic is above this.")
    min: Duration | None = Field(default=None, description="Breached when the statistic is below this.")

    @model_validator(mode="after")
    def _bounds(self) -> Threshold:
        raise_rule_problems(rules.threshold_problems(self.model_dump()))
        return self


class Limits(Model):
    """Sanity limits a playbook raises for itself, where its reviewers see it (see chaoskit.model.limits)."""

    max_hold: PositiveDuration = Field(
        default=DEFAULT_MAX_HOLD,
        description=f"The longest a fault step may hold its fault (its duration); default {DEFAULT_MAX_HOLD / 60:g}m.",
    )
    max_steps: int = Field(
        default=DEFAULT_MAX_STEPS,
        ge=1,
        le=10_000,
        description=f"The most fault steps, those of concurrent groups one by one; default {DEFAULT_MAX_STEPS}.",
    )


class Spec(Model):
    """What to run."""

    cluster: str = Field(
        default=DEFAULT_CLUSTER, max_length=63, pattern=KIND_CLUSTER_NAME, description="kind cluster name."
    )
    namespace: str = Field(
        default="",
        max_length=63,
        pattern=DNS_LABEL,
        description="chaoskit's own namespace for the run (its workload, load generator and probes); default "
        "chaoskit-<metadata.name>.",
        json_schema_extra=drop_default,
    )
    workload: Workload | None = Field(
        default=None, description="Deploy chaoskit's test workload (or name your own system in subject)."
    )
    subject: Subject | None = Field(
        default=None, description="Your own Deployment, HPA and Service to test, instead of chaoskit's workload."
    )
    diagnose: bool = Field(
        default=True,
        description="Diagnose every component before the first fault, while each group of steps holds, and after "
        "the last revert; the reports go into the run record.",
    )
    kube_proxy_mode: Literal["iptables", "nftables", "ipvs"] | None = Field(
        default=None,
        description="Run with every kube-proxy in this mode (switched in place, restored afterwards); ipvs is "
        "refused where the kernel has no ip_vs module.",
    )
    simulated_nodes: int | None = Field(
        default=None,
        ge=0,
        le=MAX_SIMULATED_NODES,
        description="Run with this many simulated nodes (kwok) in the cluster: Node objects kwok keeps Ready and "
        "heartbeating, with no machine behind them, so the control plane meets a large cluster's load; made before "
        "the workload, put back to the count found afterwards.",
    )
    steady_state: list[Check] = Field(
        default_factory=list, description="Checked before the first step and after the last revert."
    )
    steps: list[Step] = Field(min_length=1, description="Run in order.")
    probes: list[Probe] = Field(
        default_factory=list, description="Your steady state, sampled before, during and after the faults."
    )
    measurements: list[MeasurementRef] = Field(default_factory=list, description="Taken while the steps run.")
    thresholds: list[Threshold] = Field(
        default_factory=list, description="Limits on measurements; a breach is a verdict (exit 1), never an error."
    )
    limits: Limits = Field(
        default_factory=Limits,
        description="Raise the sanity limits on how long a fault is held and how many fault steps run.",
    )

    @model_validator(mode="after")
    def _names(self) -> Spec:
        steps = [_named(step, f"{i + 1}") for i, step in enumerate(self.steps)]
        _set(self, "steps", steps)
        raise_rule_problems(rules.spec_problems(self.model_dump()) + limit_problems(self.model_dump()))
        return self

    def fault_steps(self) -> list[FaultStep]:
        """Every fault step in order, those of concurrent groups included."""
        found: list[FaultStep] = []
        for step in self.steps:
            found += step.concurrent if isinstance(step, ConcurrentStep) else [step]
        return found


def _named(step: FaultStep | ConcurrentStep, position: str) -> FaultStep | ConcurrentStep:
    if isinstance(step, ConcurrentStep):
        inner = [_named(s, f"{position}.{j + 1}") for j, s in enumerate(step.concurrent)]
        return step.model_copy(update={"concurrent": inner})
    if "name" in step.model_fields_set:
        return step
    return step.model_copy(update={"name": rules.default_step_name(position, step.fault)})


class Playbook(Model):
    """A chaos experiment: faults to inject in order, what must hold before and after, what to measure."""

    api_version: Literal["chaoskit.dev/v1alpha1"] = Field(description="Always chaoskit.dev/v1alpha1.")
    kind: Literal["Playbook"] = Field(description="Always Playbook.")
    metadata: Metadata = Field(description="The playbook's name and description.")
    spec: Spec = Field(description="What to run: cluster, workload, steady state, steps, measurements, thresholds.")

    @model_validator(mode="after")
    def _namespace(self) -> Playbook:
        raise_rule_problems(rules.namespace_problems(self.model_dump()))
        if not self.spec.namespace:
            spec = self.spec.model_copy(update={"namespace": rules.default_namespace(self.metadata.name)})
            _set(self, "spec", spec)
        return self

    @property
    def name(self) -> str:
        return self.metadata.name
