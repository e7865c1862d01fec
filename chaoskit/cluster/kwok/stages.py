"""What kwok does to its Nodes and to the Pods bound to them: chaoskit's own Stage config, passed with --config.

kwok starts with no behaviour at all: each Stage names the objects it applies to (jq selectors on the object), how
long to wait, and what to do next (a status patch rendered from a Go template, or a delete). Five are enough for
nodes that stand in for kubelets and for pods that run nothing:

- node-initialize: a new node (or one the node lifecycle controller marked Unknown) reports Ready and no pressure;
- node-heartbeat: every 5-6 minutes its conditions are stamped again, as a kubelet's status report does (its
  liveness is the Lease kwok renews every 10 s, --node-lease-duration-seconds=40);
- pod-ready: a pod bound to it starts at once, its containers running and Ready, an IP from the node's podCIDR;
- pod-complete: a Job's pod succeeds a second after it started, no longer Ready;
- pod-delete: a pod being deleted goes, as a kubelet confirms it (finalizers stay their owners' to remove).

The addresses are left out on purpose: a simulated node has none, so nothing (the API server's node proxy,
metrics-server, a pod network's routes) reaches some other machine in its name.
"""

from __future__ import annotations

import io
import json
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import LiteralScalarString

API_VERSION = "kwok.x-k8s.io/v1alpha1"
NODE = {"apiGroup": "v1", "kind": "Node"}
POD = {"apiGroup": "v1", "kind": "Pod"}
REASON = "SimulatedByKwok"
HEARTBEAT_MS = 300_000  # a kubelet reports an unchanged status every 5 min (nodeStatusReportFrequency)
HEARTBEAT_JITTER_MS = 360_000  # up to a minute later, so N nodes do not all write at once
JOB_RUNS_MS = 1_000  # a watch sees a Job's pod Running before it Succeeded

Obj = dict[str, Any]


def _jq(key: str, operator: str, *values: str) -> Obj:
    expression: Obj = {"key": key, "operator": operator}
    if values:
        expression["values"] = list(values)
    return {"jq": expression}


READY_STATUS = '.status.conditions.[] | select( .type == "Ready" ) | .status'
NOT_DELETING = _jq(".metadata.deletionTimestamp", "DoesNotExist")

# The conditions a healthy kubelet reports, each saying who reports it here.
_CONDITIONS = (
    ("Ready", "True", "kwok keeps this node Ready; no kubelet runs behind it"),
    ("MemoryPressure", "False", "simulated: no memory to run short of"),
    ("DiskPressure", "False", "simulated: no disk to fill"),
    ("PIDPressure", "False", "simulated: no processes"),
    ("NetworkUnavailable", "False", "simulated: no network to configure"),
)


def _conditions(transition: str) -> str:
    """The conditions as a template's YAML; `transition` is the template expression for lastTransitionTime."""
    lines = ["conditions:"]
    for kind, status, message in _CONDITIONS:
        lines += [
            f"- type: {kind}",
            f'  status: "{status}"',
            f"  reason: {REASON}",
            f"  message: {json.dumps(message)}",
            "  lastHeartbeatTime: {{ $now | Quote }}",
            f"  lastTransitionTime: {transition}",
        ]
    return "\n".join(lines)


# capacity and allocatable are the Node's own (chaoskit's nodes carry them); a node made without them gets these,
# so the scheduler sees room on it
_NODE_INITIALIZE = f"""\
{{{{ $now := Now }}}}
{{{{ $since := or .metadata.creationTimestamp $now }}}}
{_conditions("{{ $since | Quote }}")}
{{{{ if not .status.capacity }}}}
capacity: {{cpu: "32", memory: 256Gi, pods: "110"}}
{{{{ end }}}}
{{{{ if not .status.allocatable }}}}
allocatable: {{cpu: "32", memory: 256Gi, pods: "110"}}
{{{{ end }}}}
phase: Running
"""

# only the stamps move: each condition keeps its status, reason and lastTransitionTime (a strategic merge by type)
_NODE_HEARTBEAT = "{{ $now := Now }}\nconditions:\n" + "".join(
    f"- type: {kind}\n  lastHeartbeatTime: {{{{ $now | Quote }}}}\n" for kind, _, _ in _CONDITIONS
)

_POD_READY = """\
{{ $now := Now }}
conditions:
- type: PodReadyToStartContainers
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
- type: Initialized
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
- type: ContainersReady
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
- type: Ready
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
{{ range .spec.readinessGates }}
- type: {{ .conditionType | Quote }}
  status: "True"
  lastTransitionTime: {{ $now | Quote }}
{{ end }}
{{ with .spec.initContainers }}
initContainerStatuses:
{{ range . }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  restartCount: 0
  {{ if eq (or .restartPolicy "") "Always" }}
  ready: true
  started: true
  state: {running: {startedAt: {{ $now | Quote }}}}
  {{ else }}
  ready: true
  state: {terminated: {exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}}
  {{ end }}
{{ end }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: true
  started: true
  restartCount: 0
  state: {running: {startedAt: {{ $now | Quote }}}}
{{ end }}
{{ $m := .metadata }}
{{ with PodIPsWith .spec.nodeName (or .spec.hostNetwork false) (or $m.uid "") $m.name $m.namespace }}
podIP: {{ index . 0 | Quote }}
podIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
phase: Running
startTime: {{ $now | Quote }}
"""

_POD_COMPLETE = """\
{{ $now := Now }}
conditions:
- type: ContainersReady
  status: "False"
  reason: PodCompleted
  lastTransitionTime: {{ $now | Quote }}
- type: Ready
  status: "False"
  reason: PodCompleted
  lastTransitionTime: {{ $now | Quote }}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: false
  started: false
  restartCount: 0
  state: {terminated: {exitCode: 0, reason: Completed, finishedAt: {{ $now | Quote }}}}
{{ end }}
phase: Succeeded
"""


def _stage(name: str, resource: Obj, selector: list[Obj], next_: Obj, delay: Obj | None = None) -> Obj:
    spec: Obj = {"resourceRef": resource, "selector": {"matchExpressions": selector}}
    if delay:
        spec["delay"] = delay
    spec["next"] = next_
    return {"apiVersion": API_VERSION, "kind": "Stage", "metadata": {"name": name}, "spec": spec}


def _status(template: str) -> Obj:
    return {"statusTemplate": LiteralScalarString(template)}


def stages() -> list[Obj]:
    """Every Stage, nodes first."""
    return [
        _stage("node-initialize", NODE, [_jq(READY_STATUS, "NotIn", "True")], _status(_NODE_INITIALIZE)),
        _stage(
            "node-heartbeat",
            NODE,
            [_jq(".status.phase", "In", "Running"), _jq(READY_STATUS, "In", "True")],
            _status(_NODE_HEARTBEAT),
            {"durationMilliseconds": HEARTBEAT_MS, "jitterDurationMilliseconds": HEARTBEAT_JITTER_MS},
        ),
        _stage(
            "pod-ready",
            POD,
            [NOT_DELETING, _jq(".status.phase", "In", "Pending"), _jq(READY_STATUS, "NotIn", "True")],
            _status(_POD_READY),
        ),
        _stage(
            "pod-complete",
            POD,
            [
                NOT_DELETING,
                _jq(".status.phase", "In", "Running"),
                _jq(".metadata.ownerReferences.[].kind", "In", "Job"),
            ],
            _status(_POD_COMPLETE),
            {"durationMilliseconds": JOB_RUNS_MS},
        ),
        _stage("pod-delete", POD, [_jq(".metadata.deletionTimestamp", "Exists")], {"delete": True}),
    ]


def config_text() -> str:
    """The Stages as one multi-document YAML stream: what kwok's --config reads."""
    buf = io.StringIO()
    y = YAML()
    y.width = 4096  # a selector's jq expression stays on one line
    y.explicit_start = True
    y.dump_all(stages(), buf)
    return buf.getvalue()
