"""http probe: a pod in chaoskit's namespace asks the URL every `every`, each request on a new connection (as a new
client would: a kept-alive one rides its conntrack entry through broken Service rules), and logs one line per
request; its log, read through the API whenever the API answers, is the samples. The pod keeps sampling through an
API-server outage (its log is on the node), so a fault of the control plane costs no samples, only their reading
until it is back."""

from __future__ import annotations

import time

from chaoskit import workloads
from chaoskit.figures import seconds
from chaoskit.model.probes import HttpProbe
from chaoskit.model.slo import ProbeSample
from chaoskit.probes.base import ProbeError, Prober
from chaoskit.seams.kube import Kube, KubeError

START_TIMEOUT = 60.0


def parse_line(line: str) -> ProbeSample | None:
    """ "<start unix ms> <HTTP status, or 0> <latency ms> [error]" (images/workload: probe) as a sample: a success
    when answered with no error; an error after a status is the criterion the answer missed."""
    parts = line.split(" ", 3)
    try:
        at, status, latency = int(parts[0]) / 1000, int(parts[1]), float(parts[2]) / 1000
    except (IndexError, ValueError):
        return None
    why = parts[3] if len(parts) > 3 else ""
    if status and not why:
        return ProbeSample(at, True, latency, f"HTTP {status}")
    if status:
        return ProbeSample(at, False, None, f"HTTP {status}: {why}")
    return ProbeSample(at, False, None, why or "no answer")


def request_flags(spec: HttpProbe) -> list[str]:
    """The probe program's flags for the request and its criteria, one `-flag=value` argument each (a value that
    starts with '-' stays a value)."""
    flags = [f"-method={spec.method}"] if spec.method != "GET" else []
    flags += [f"-header={name}: {value}" for name, value in spec.headers.items()]
    flags += [f"-body={spec.body}"] if spec.body is not None else []
    flags += [f"-status={','.join(str(s) for s in spec.status)}"] if spec.status else []
    flags += [f"-contains={spec.body_contains}"] if spec.body_contains else []
    flags += [f"-matches={spec.body_matches}"] if spec.body_matches else []
    return flags


class HttpProber(Prober):
    polled = False

    def __init__(
        self, kube: Kube, spec: HttpProbe, every: float, namespace: str, name: str, node: str | None = None
    ) -> None:
        self.kube, self.spec, self.every, self.namespace, self.name = kube, spec, every, namespace, name
        self.node = node  # resolved from spec.node (a role picks a node)
        self.path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        self.samples: list[ProbeSample] = []

    def start(self) -> None:
        self.kube.apply(
            workloads.probe_pod(
                self.namespace,
                self.name,
                self.spec.url,
                self.every,
                self.spec.timeout,
                self.node,
                request_flags(self.spec),
            )
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            pod = self.kube.find(self.path) or {}
            phase = pod.get("status", {}).get("phase")
            if phase == "Running":
                return
            if phase in ("Failed", "Succeeded"):
                break
            time.sleep(0.5)
        raise ProbeError(
            f"http probe {self.name}: its pod did not start within {seconds(START_TIMEOUT)} "
            f"(phase {phase or 'none'}; is chaoskit's workload image in the cluster?)"
        )

    def collect(self) -> list[ProbeSample]:
        try:
            text = self.kube.raw(f"{self.path}/log")
        except KubeError:
            return self.samples  # the API is down: what was read before, and the rest later
        self.samples = [s for s in map(parse_line, text.splitlines()) if s is not None]
        return self.samples

    def stop(self) -> None:
        try:
            self.collect()
            self.kube.delete(self.path, propagation="Background")
        except KubeError:
            pass  # it goes with chaoskit's namespace
