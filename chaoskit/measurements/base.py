"""What a measurement is: started before the faults, stopped after; it returns its raw timeline.

Aggregation (percentiles) and thresholds are pure functions of the result (chaoskit.model.timeline); a measurement
that could not observe says so in `errors` or `gaps`, it never invents a figure.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, Field

from chaoskit.env import Env
from chaoskit.errors import ToolError
from chaoskit.model.params import FaultParams
from chaoskit.model.timeline import MeasurementResult
from chaoskit.registry import MEASUREMENTS
from chaoskit.seams.kube import Kube
from chaoskit.subject import Kind


class MissingPiece(ToolError):
    """An HPA, Service, Deployment or the metrics API the measurement needs is not there."""


def must_get(kube: Kube, path: str, what: str) -> dict[str, Any]:
    """The object at `path`, or MissingPiece naming `what` is missing."""
    try:
        obj: dict[str, Any] = kube.get(path)
    except ToolError as exc:
        raise MissingPiece(f"no {what} at {path}: {exc}") from exc
    return obj


class TargetParams(FaultParams):
    """The workload a measurement watches; the namespace defaults to the playbook's."""

    namespace: str = Field(default="", description="Namespace of the workload (default: the playbook's).")
    deployment: str = Field(default="web", description="The Deployment (or StatefulSet) to watch.")
    kind: Kind = Field(
        default="Deployment",
        description="What `deployment` names: a StatefulSet's pods come straight from its controller (no "
        "replicaset_scaled stage).",
    )
    service: str = Field(default="web", description="The Service in front of it.")
    hpa: str = Field(default="", description="Its HorizontalPodAutoscaler; default: named as the Deployment.")
    first_request: bool = Field(
        default=True,
        description="The Service's GET / answers with the pod's name, as chaoskit's workload does: time each new "
        "pod's first answer through it (hpa_scale_up) and when requests follow an endpoint change (rule_sync). Off by "
        "default for your own subject: then only the rules are read.",
    )


class Measurement(ABC):
    name: ClassVar[str]  # as playbooks spell its type
    Params: ClassVar[type[BaseModel]] = TargetParams
    # node components it times on every node: a fault on any node's one lands in its figures, whoever injected it
    every_node: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, env: Env, params: BaseModel, label: str, namespace: str) -> None:
        self.env, self.params, self.label, self.namespace = env, params, label, namespace
        self.say: Callable[[str], None] = lambda _: None  # progress lines, for a driver that shows them

    @abstractmethod
    def start(self) -> None:
        """Begin observing; raises a clear error naming what is missing (HPA, Service, metrics API)."""

    @abstractmethod
    def stop(self) -> MeasurementResult:
        """Stop observing and return the timeline."""


MeasurementT = TypeVar("MeasurementT", bound=type[Measurement])


def register(cls: MeasurementT) -> MeasurementT:
    MEASUREMENTS.add(cls.name, cls)
    return cls
