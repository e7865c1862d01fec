"""Faults beyond the catalog's playbooks, injected into the real component: the variants a parameter makes, the
kube-proxy faults in the proxy modes no playbook runs them in, and effect checks that must fail when the injection is
a no-op. After each, the cluster is healthy again (all nodes Ready, API server /readyz ok, every kube-system pod
Ready). Each fault with its default parameters is proven once, in test_catalog.py's run of every playbook."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import BaseModel

from chaoskit.checks.cluster import ClusterHealthy
from chaoskit.cluster.kind import node_containers
from chaoskit.cluster.kube import Kube
from chaoskit.cluster.shell import SubprocessRunner
from chaoskit.components.kube_proxy import ipvs_unsupported, node_names, running_mode, set_mode
from chaoskit.diagnosers.run import diagnose
from chaoskit.engine import run_fault
from chaoskit.env import Env
from chaoskit.faults.base import Fault, FaultPlan
from chaoskit.faults.kube_proxy import KubeProxySlowSync
from chaoskit.faults.kubelet import SINCE
from chaoskit.faults.scheduler import TAINT_KEY
from chaoskit.faults.sync_delay import SERVICE as SLOW_SYNC_PROBE
from chaoskit.journal import Journal
from chaoskit.model.params import NoParams
from chaoskit.registry import FAULTS, load_catalog
from chaoskit.runner import names_fault

load_catalog()
HEALTH_TIMEOUT = 240.0


def cluster_problems(env: Env) -> list[str]:
    outcome = ClusterHealthy().run(env, NoParams())
    return [] if outcome.ok else [outcome.detail]


def wait_healthy(env: Env, timeout: float = HEALTH_TIMEOUT) -> None:
    last: list[str] = []

    def healthy() -> bool:
        nonlocal last
        last = cluster_problems(env)
        return not last

    try:
        env.kube.wait("the cluster to be healthy", healthy, timeout, interval=2)
    except Exception as exc:
        raise AssertionError(f"cluster not healthy after {timeout:.0f}s: {last}") from exc


@pytest.fixture
def env(kube: Kube, cluster: str) -> Env:
    env = Env.for_kind(kube, cluster)
    wait_healthy(env)  # each fault starts from a healthy cluster
    return env


def _node(cluster: str, fault: Fault) -> str:
    return f"{cluster}-control-plane" if fault.target_role == "control-plane" else f"{cluster}-worker"


def measured(fault: Fault) -> str:
    """What kube-proxy.slow-sync's effect check measured, each attempt."""
    found = fault.measured if isinstance(fault, KubeProxySlowSync) else []
    return "".join(f"\n  {m}" for m in found)


# Params that change what a fault does, beyond the defaults the test above runs.
VARIANTS = [
    ("scheduler.unschedulable", {"reason": "taint"}),
    ("scheduler.unschedulable", {"reason": "affinity", "namespace": "default"}),
]


@pytest.mark.parametrize(("name", "params"), VARIANTS, ids=[f"{n}-{'-'.join(p.values())}" for n, p in VARIANTS])
def test_fault_variant_takes_effect_and_heals(name: str, params: dict[str, str], env: Env, tmp_path: Path) -> None:
    fault: Fault = FAULTS.get(name)()  # type: ignore[assignment]
    node, named = _node(env.cluster, fault), []

    def diagnosed() -> None:  # the catalog's playbooks name the other reasons; this one is named here
        nodes = [n.name for n in node_containers(SubprocessRunner(), env.cluster)]
        named.append(
            env.kube.wait(
                f"a diagnosis naming {name}",
                lambda: names_fault(diagnose(env, node, nodes), fault, node, []),
                60,
                interval=2,
            )
        )

    result = run_fault(env, fault, node, fault.Params.model_validate(params), duration=5,
                       journal=Journal(tmp_path / "j.jsonl"), on_effect=diagnosed if params.get("reason") == "taint"
                       else None)  # fmt: skip
    assert result.ok, result.errors
    assert named or params.get("reason") != "taint"
    wait_healthy(env)
    print(f"\n{name} {params}: effect {result.effect_s:.1f}s, recovered {result.recovery_s:.1f}s after revert"
          f"{measured(fault)}")  # fmt: skip


# Not in iptables mode (every playbook but one) nor for freeze and flush-rules in nftables (kube-proxy-nftables.yaml).
# slow-sync here also takes a period above syncPeriod's 30 s default (that is raised too), where its playbook's is 30 s.
PROXY_MODES = [("kube-proxy.slow-sync", "nftables"), ("kube-proxy.freeze", "ipvs"), ("kube-proxy.flush-rules", "ipvs")]
MODE_PARAMS = {"kube-proxy.slow-sync": {"minSyncPeriod": "35s"}}


@pytest.fixture
def proxy_mode(request: pytest.FixtureRequest, env: Env) -> Iterator[str]:
    """Every kube-proxy switched to the mode under test, and back to kind's iptables afterwards."""
    mode: str = request.param
    if mode == "ipvs" and (reason := ipvs_unsupported(env.nodes, f"{env.cluster}-worker")):
        pytest.skip(reason)
    set_mode(env.kube, env.nodes, mode)
    try:
        yield mode
    finally:
        set_mode(env.kube, env.nodes, "iptables")


@pytest.mark.parametrize(
    ("name", "proxy_mode"), PROXY_MODES, indirect=["proxy_mode"], ids=[f"{n}-{m}" for n, m in PROXY_MODES]
)
def test_kube_proxy_fault_holds_in_every_proxy_mode(name: str, proxy_mode: str, env: Env, tmp_path: Path) -> None:
    fault: Fault = FAULTS.get(name)()  # type: ignore[assignment]
    params = fault.Params.model_validate(MODE_PARAMS.get(name, {}))
    result = run_fault(env, fault, _node(env.cluster, fault), params, duration=5, journal=Journal(tmp_path / "j.jsonl"))
    assert result.ok, result.errors
    assert {running_mode(env.nodes, n) for n in node_names(env.kube)} == {proxy_mode}  # the fault kept the mode
    wait_healthy(env)
    print(f"\n{name} ({proxy_mode}, {MODE_PARAMS.get(name, {})}): effect {result.effect_s:.1f}s, recovered "
          f"{result.recovery_s:.1f}s after revert{measured(fault)}")  # fmt: skip


def without_injection(fault: Fault, keep: Callable[[str], bool], timeout: float) -> Fault:
    """The fault with its injecting apply lines removed (those `keep` spares only set up what the check reads), and
    a short effect timeout (well past when the real effect shows): its effect check must then never pass."""

    class NoOp(type(fault)):  # type: ignore[misc]
        effect_timeout = timeout

        def plan(self, node: str, params: BaseModel) -> FaultPlan:
            plan: FaultPlan = super().plan(node, params)
            return dataclasses.replace(plan, apply=tuple(a for a in plan.apply if keep(a)), handoffs=())

    return NoOp()


# Per fault: the apply lines that stay (setup the check needs), the params, and how long to wait for an effect.
NO_OPS: dict[str, tuple[Callable[[str], bool], dict[str, str], float]] = {
    # the Deployment stays, pinned to a label no node then has: Pending, but for want of a node, not for the taint
    # (the real taint's FailedScheduling event comes within a second)
    "scheduler.unschedulable": (lambda line: f'taint nodes "$n" {TAINT_KEY}' not in line, {"reason": "taint"}, 8.0),
    # the probe Service stays, kube-proxy keeps kind's 1 s minSyncPeriod
    "kube-proxy.slow-sync": (lambda line: SLOW_SYNC_PROBE in line, {}, 20.0),
    # the journal bookmark stays, kubelet keeps its valid certificate
    "kubelet.cert-expired": (lambda line: SINCE in line and "date" in line, {}, 20.0),
}


def _run_no_op(name: str, env: Env, journal: Path) -> str:
    """One fault with its injection removed; what went wrong, or "" when its effect check never passed."""
    keep, params, timeout = NO_OPS[name]
    real: Fault = FAULTS.get(name)()  # type: ignore[assignment]
    fault = without_injection(real, keep, timeout)
    plan = fault.plan(_node(env.cluster, real), fault.Params.model_validate(params))
    assert plan.apply and len(plan.apply) < len(real.plan(plan.node, plan.params).apply)
    result = run_fault(env, fault, plan.node, plan.params, duration=5, journal=Journal(journal))
    print(f"\n{name} with its injection removed: effect {result.effect_s}, errors {result.errors}{measured(fault)}")
    if result.effect_s is not None:
        return f"{name}: the effect check passed with nothing injected"
    return "" if result.recovery_s is not None else f"{name}: {result.errors}"


def test_an_effect_check_fails_when_the_injection_is_a_no_op(env: Env, tmp_path: Path) -> None:
    # all at once: with nothing injected they meet nowhere, and each waits out its effect timeout
    with ThreadPoolExecutor(len(NO_OPS)) as pool:
        found = list(pool.map(lambda n: _run_no_op(n, env, tmp_path / f"{n}.jsonl"), sorted(NO_OPS)))
    assert not any(found), found
    wait_healthy(env)
