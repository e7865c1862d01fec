"""A small fault/check/measurement catalog and playbook texts shared by the playbook tests (not a test module)."""

from __future__ import annotations

import textwrap
from typing import Literal

from pydantic import BaseModel, ConfigDict

from chaoskit.errors import PlaybookError
from chaoskit.model.duration import Duration
from chaoskit.model.playbook import Playbook
from chaoskit.playbook import parse_playbook
from chaoskit.registry import Registered, Registry

FILE = "pb.yaml"


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KubeletStopParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    signal: Literal["SIGSTOP", "SIGTERM"] = "SIGSTOP"


class EtcdDelayParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    delay: Duration
    jitter: Duration = 0.0


def make_catalog() -> dict[str, Registry[Registered]]:
    """Fresh registries, so no test sees another's registrations."""
    faults: Registry[Registered] = Registry("fault")
    checks: Registry[Registered] = Registry("check")
    measurements: Registry[Registered] = Registry("measurement")

    @faults.register("scheduler.down")
    class SchedulerDown:
        """Stop the scheduler by moving its static-pod manifest away."""

        Params = NoParams

    @faults.register("kube-proxy.freeze")
    class KubeProxyFreeze:
        """Freeze kube-proxy on a node."""

        Params = NoParams

    @faults.register("kubelet.stop")
    class KubeletStop:
        """Stop the kubelet on a node."""

        Params = KubeletStopParams

    @faults.register("apiserver.etcd-delay")
    class EtcdDelay:
        """Delay traffic from the API server to etcd."""

        Params = EtcdDelayParams

    @checks.register("nodes-ready")
    class NodesReady:
        """Every node is Ready."""

        Params = NoParams

    @measurements.register("hpa_scale_up")
    class HpaScaleUp:
        """HPA decision to Ready pods, stage by stage."""

        Params = NoParams

    return {"faults": faults, "checks": checks, "measurements": measurements}


EXAMPLE = "tests/unit/data/full-playbook.yaml"  # every field of the format, with a test catalog

MINIMAL = """\
apiVersion: chaoskit.dev/v1alpha1
kind: Playbook
metadata:
  name: demo
spec:
  steps:
    - fault: scheduler.down
      duration: 20s
"""


def load(text: str | bytes) -> Playbook:
    source = textwrap.dedent(text) if isinstance(text, str) else text
    return parse_playbook(source, file=FILE, **make_catalog())


def problems(text: str | bytes) -> list[str]:
    """Every problem of the playbook `text` as `pb.yaml:line:col: path: message`."""
    try:
        load(text)
    except PlaybookError as exc:
        return [str(p) for p in exc.problems]
    raise AssertionError("the playbook loaded; expected problems")
