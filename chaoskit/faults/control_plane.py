"""Faults shared by the static-pod components (API server, scheduler, controller manager).

On kind they are static pods: deleting the mirror pod through the API does not
stop the process; moving the manifest out of /etc/kubernetes/manifests does.
"""

from __future__ import annotations

import time
from typing import ClassVar

from pydantic import BaseModel

from chaoskit.components.common import comm, continue_command, manifest, thawed_check
from chaoskit.components.leases import LeaseState
from chaoskit.env import Env
from chaoskit.faults.base import Fault, FaultPlan, absent, every, in_place, kubectl, local_healthz, process_running, sh
from chaoskit.model.timeline import api_time
from chaoskit.seams.nodeexec import Node

PARKED = "/etc/kubernetes/chaoskit-parked"
POD_GONE_WAIT_S = 60  # kubelet is done with a static pod's old instance within seconds; past this, go on anyway


def swap_static_pod(container: str, manifest_path: str, replacement: str, lease: str = "") -> str:
    """A shell line putting `replacement` in place of a static pod's manifest, with the new process up in seconds.

    A manifest renamed over the old one costs about 33 s: kubelet starts the new instance only after a 10-15 s
    back-off while the old one, of the same name, terminates, and a new process waits out the dead one's 15 s lease
    from when it first sees it. So the manifest is removed, kubelet finishes with the old pod (its folder under
    /var/lib/kubelet/pods goes), the dead holder's `lease` is cut to 1 s where the API answers, and the replacement
    is renamed in: a new leader in about 5 s. A missing or already matching replacement changes nothing: whether the
    manifest is the one wanted is for `static_pod_back` to say.
    """
    gone = f"! ls -d /var/lib/kubelet/pods/*/containers/{container} >/dev/null 2>&1"
    steps = [
        f"if [ ! -f {replacement} ] || cmp -s {replacement} {manifest_path}; then rm -f {replacement}; else",
        f"rm -f {manifest_path};",
        f"i=0; until {gone}; do i=$((i+1)); [ $i -ge {POD_GONE_WAIT_S * 5} ] && break; sleep 0.2; done;",
    ]
    if lease:
        get = kubectl("-n", "kube-system", "get", "lease", lease, "-o", "json", "--request-timeout=5s")
        cut = 'sed \'s/"leaseDurationSeconds": [0-9]*/"leaseDurationSeconds": 1/\''
        # the lease's resourceVersion makes the replace fail if a live holder renewed it meanwhile
        steps.append(
            f"{{ {get} | {cut} | {kubectl('replace', '-f', '-', '--request-timeout=5s')}; }} >/dev/null 2>&1 || true;"
        )
    steps.append(f"mv {replacement} {manifest_path}; fi")
    return " ".join(steps)


def static_pod_back(manifest_path: str, parked: str) -> str:
    """A verify line failing while a static pod's manifest is not in place or its parked copy is still there."""
    return every(in_place(manifest_path), absent(parked))


def started_at(env: Env, node: Node, process: str) -> float | None:
    """When the newest process named `process` on `node` started (epoch seconds, to the second); None if none runs."""
    done = env.nodes.run(node, ["ps", "-o", "etimes=", "-C", comm(process)], check=False)
    ages = [int(a) for a in done.stdout.split() if a.isdigit()]
    return time.time() - min(ages) if done.returncode == 0 and ages else None


def leads_now(env: Env, node: Node, process: str, lease_path: str) -> bool:
    """The process running now holds its leader lease: acquired after it started (not the one stopped before), and
    renewed within half the lease's duration."""
    started = started_at(env, node, process)
    found = env.kube.find(lease_path)
    if started is None or found is None:
        return False
    lease = LeaseState.of(found, time.time())
    taken = api_time((found.get("spec") or {}).get("acquireTime"))
    renewing = lease.age is not None and lease.age <= lease.duration / 2
    return taken is not None and taken >= started - 1 and renewing  # etimes counts whole seconds


class StaticPodDown(Fault):
    """Base for "<component> down": its static pod manifest is parked outside the manifests folder."""

    process: str  # the binary's name, also the manifest's
    health_port: int
    # its leader lease: recovery is the new process holding it, not /healthz first answering ("" for the API server,
    # which leads nothing)
    lease: ClassVar[str] = ""
    # a component that crashed in earlier outages (a scheduler or controller manager exits when it loses its lease)
    # comes back under the kubelet's crash-loop back-off, up to 300 s
    recovery_timeout = 300.0

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        running, parked = manifest(self.process), f"{PARKED}/{self.process}.yaml"
        return FaultPlan(
            self.name,
            node,
            apply=(sh("mkdir", "-p", PARKED), sh("mv", running, parked)),
            undo=(f"if [ -f {parked} ]; then mv {parked} {running}; fi",),
            verify=(static_pod_back(running, parked),),
            summary=f"move {running} to {PARKED}/ so kubelet stops {self.process}",
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        return not process_running(env, plan.node, self.process)

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        if not local_healthz(env, plan.node, self.health_port):
            return False
        return not self.lease or leads_now(env, plan.node, self.process, self.lease)


class ProcessFrozen(Fault):
    """Base for "<component> hung": SIGSTOP freezes the process (a deadlock as seen from outside); SIGCONT thaws it.

    Its checks are each component's own: the process state chaoskit set says nothing of what the component does."""

    process: str

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        return FaultPlan(
            self.name,
            node,
            apply=(sh("pkill", "-STOP", "-x", comm(self.process)),),
            undo=(continue_command(self.process),),
            verify=(thawed_check(self.process),),
            summary=f"SIGSTOP every {self.process} process on {node.name}",
        )
