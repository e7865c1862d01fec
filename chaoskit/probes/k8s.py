"""k8s probe: one object's status condition (must be True) or field (compared with equals, min or max)."""

from __future__ import annotations

import time
from typing import Any

from chaoskit.cluster.kube import Kube, KubeError, object_path
from chaoskit.model.probes import K8sProbe
from chaoskit.model.slo import ProbeSample
from chaoskit.probes.base import ProbeError, Prober


class K8sProber(Prober):
    def __init__(self, kube: Kube, spec: K8sProbe) -> None:
        self.kube, self.spec = kube, spec
        meta = {"name": spec.name} | ({"namespace": spec.namespace} if spec.namespace else {})
        self.path = object_path({"apiVersion": spec.api_version, "kind": spec.kind, "metadata": meta})

    def start(self) -> None:
        try:
            self.kube.get(self.path)
        except KubeError as exc:  # the object's absence is a failed sample; a kind the API does not serve is not
            if "HTTP 404" in str(exc) and self._kind_served():
                return
            raise ProbeError(f"k8s probe {self.spec.kind} {self.spec.name}: {exc}") from exc

    def _kind_served(self) -> bool:
        group = self.spec.api_version
        listing = f"/api/{group}" if "/" not in group else f"/apis/{group}"
        try:
            return any(r.get("kind") == self.spec.kind for r in self.kube.get(listing).get("resources", []))
        except KubeError:
            return False

    def poll(self) -> ProbeSample:
        at = time.time()
        try:
            obj = self.kube.get(self.path)
        except KubeError as exc:
            return ProbeSample(at, False, None, str(exc).splitlines()[0][:200])
        return judge_object(self.spec, obj, at)


def judge_object(spec: K8sProbe, obj: Any, at: float) -> ProbeSample:
    if spec.condition is not None:
        found = next((c for c in obj.get("status", {}).get("conditions") or [] if c.get("type") == spec.condition),
                     None)  # fmt: skip
        status = found.get("status") if found else "absent"
        return ProbeSample(at, status == "True", None, f"{spec.condition} is {status}")
    value: Any = obj
    for part in (spec.field or "").split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if spec.equals is not None:
        return ProbeSample(at, value == spec.equals, _number(value), f"{spec.field} is {value!r}")
    number = _number(value)
    if number is None:
        return ProbeSample(at, False, None, f"{spec.field} is {value!r}, not a number")
    ok = (spec.min is None or number >= spec.min) and (spec.max is None or number <= spec.max)
    return ProbeSample(at, ok, number, f"{spec.field} is {number:g}")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
