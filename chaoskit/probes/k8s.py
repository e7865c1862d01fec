"""k8s probe: one object's status condition (must be True) or field (compared with equals, min or max)."""

from __future__ import annotations

import time
from typing import Any

from chaoskit.model.probes import K8sProbe
from chaoskit.model.slo import ProbeSample
from chaoskit.probes.base import ProbeError, Prober
from chaoskit.seams.kube import Kube, KubeError


class K8sProber(Prober):
    def __init__(self, kube: Kube, spec: K8sProbe) -> None:
        self.kube, self.spec = kube, spec
        self.path = ""  # found at start() from the API's discovery: any kind the cluster serves, CRDs included

    def start(self) -> None:
        group, spec = self.spec.api_version, self.spec
        listing = f"/api/{group}" if "/" not in group else f"/apis/{group}"
        try:
            served = self.kube.get(listing).get("resources", [])
        except KubeError as exc:
            raise ProbeError(f"k8s probe {spec.kind} {spec.name}: the cluster serves no {group}: {exc}") from exc
        found = next((r for r in served if r.get("kind") == spec.kind and "/" not in r.get("name", "")), None)
        if found is None:
            raise ProbeError(f"k8s probe {spec.kind} {spec.name}: the cluster serves no kind {spec.kind} in {group}")
        where = f"/namespaces/{spec.namespace}" if found.get("namespaced") and spec.namespace else ""
        self.path = f"{listing}{where}/{found['name']}/{spec.name}"

    def poll(self) -> ProbeSample:
        at = time.time()
        try:
            obj = self.kube.get(self.path)  # absent: a failed sample, as it would fail the user
        except KubeError as exc:
            return ProbeSample(at, False, None, str(exc).splitlines()[0][:200])
        return judge_object(self.spec, obj, at)


def judge_object(spec: K8sProbe, obj: Any, at: float) -> ProbeSample:
    if spec.condition is not None:
        found = next(
            (c for c in obj.get("status", {}).get("conditions") or [] if c.get("type") == spec.condition), None
        )
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
