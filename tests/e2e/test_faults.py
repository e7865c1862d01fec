"""Faults beyond the catalog's playbooks, injected into the real component: the variants a parameter makes, the
kube-proxy faults in the proxy modes no playbook runs them in, and effect checks that must fail when the injection is
a no-op. After each, the cluster is healthy again (all nodes Ready, API server /readyz ok, every kube-system pod
Ready). Each fault with its default parameters is proven once, in test_catalog.py's run of every playbook."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from chaoskit.checks.cluster import ClusterHealthy
from chaoskit.components.kube_proxy import proxied_nodes, running_mode, set_mode
from chaoskit.diagnosers.run import diagnose
from chaoskit.engine import run_fault
from chaoskit.env import Env
from chaoskit.faults.base import Fault, FaultPlan
from chaoskit.faults.controller_manager.stuck import STUCK, ControllerStuck
from chaoskit.faults.kube_proxy import KubeProxySlowSync
from chaoskit.journal import Journal
from chaoskit.model.factcheck import observed_words
from chaoskit.model.params import NoParams
from chaoskit.playbook.loader import load_playbook
from chaoskit.registry import FAULTS, load_catalog
from chaoskit.run.during import names_fault
from chaoskit.seams.kube import Kube
from chaoskit.seams.nodecontainers import node_containers
from chaoskit.seams.nodeexec import Node
from chaoskit.seams.shell import SubprocessRunner
from chaoskit.step import resolve

load_catalog()
PLAYBOOKS = sorted(Path("playbooks").glob("*.yaml"))
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

    def diagnosed() -> None:  # every variant is named by the diagnosis while it holds
        nodes = [n.name for n in node_containers(SubprocessRunner(), env.cluster)]
        named.append(
            env.kube.wait(
                f"a diagnosis naming {name}",
                lambda: names_fault(diagnose(env, node, nodes), fault, node, []),
                60,
                interval=2,
            )
        )

    step = resolve(fault, fault.Params.model_validate(params), env.nodes.list_nodes(), target=node, duration=5)
    result = run_fault(env, step, journal=Journal(tmp_path / "j.jsonl"), on_effect=diagnosed)
    assert result.held, result.errors
    assert named, f"no diagnosis named {name} {params} while it held"
    wait_healthy(env)
    print(
        f"\n{name} {params}: effect {result.effect_s:.1f}s, recovered {result.recovery_s:.1f}s after revert"
        f"{measured(fault)}"
    )


# Not in iptables mode (every playbook but one) nor for freeze and flush-rules in nftables (kube-proxy-nftables.yaml).
# slow-sync here also takes a period above syncPeriod's 30 s default (that is raised too), where its playbook's is 30 s.
# No IPVS case: flush-rules refuses IPVS mode, and the checks of freeze and slow-sync read iptables or nftables rules
# only (in IPVS mode their fact check would say inconclusive); this host's kernel has no ip_vs to run it anyway.
PROXY_MODES = [("kube-proxy.slow-sync", "nftables")]
MODE_PARAMS = {"kube-proxy.slow-sync": {"minSyncPeriod": "35s"}}


@pytest.fixture
def proxy_mode(request: pytest.FixtureRequest, env: Env) -> Iterator[str]:
    """Every kube-proxy switched to the mode under test, and back to kind's iptables afterwards."""
    mode: str = request.param
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
    step = resolve(fault, params, env.nodes.list_nodes(), target=_node(env.cluster, fault), duration=5)
    result = run_fault(env, step, journal=Journal(tmp_path / "j.jsonl"))
    assert result.held, result.errors
    assert {running_mode(env.nodes, n) for n in proxied_nodes(env.kube)} == {proxy_mode}  # the fault kept the mode
    wait_healthy(env)
    print(
        f"\n{name} ({proxy_mode}, {MODE_PARAMS.get(name, {})}): effect {result.effect_s:.1f}s, recovered "
        f"{result.recovery_s:.1f}s after revert{measured(fault)}"
    )


def no_op_of(fault: Fault, params: BaseModel) -> Fault:
    """The fault with its apply lines and handoffs replaced by nothing (its setup kept: what the checks read) and its
    effect timeout cut to its no-op control's wait for `params`, well past when the real effect shows."""

    class NoOp(type(fault)):  # type: ignore[misc]
        effect_timeout = fault.no_op_wait(params)

        def plan(self, node: Node, params: BaseModel) -> FaultPlan:
            plan: FaultPlan = super().plan(node, params)
            return plan.no_op()

    return NoOp()


def no_op_variants() -> dict[str, list[dict[str, Any]]]:
    """Each fault's no-op controls: its own, one per distinct params a playbook of the catalog or this file's
    VARIANTS run it with, and one per controller of controller-stuck (test_controller_stuck.py runs them all). A
    variant the catalog gains gets its control here without a line more."""
    found: dict[str, list[dict[str, Any]]] = {n: [dict(FAULTS.get(n).no_op.params)] for n in FAULTS.names()}  # type: ignore[attr-defined]
    runs = [(s.fault, dict(s.params)) for p in PLAYBOOKS for s in load_playbook(p).spec.fault_steps()]
    runs += [(n, dict(v)) for n, v in VARIANTS] + [(ControllerStuck.name, {"controller": c}) for c in STUCK]
    for name, params in runs:
        if not any(_same(name, params, known) for known in found[name]):
            found[name].append(params)
    return found


def _same(name: str, a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two params of one fault that resolve to the same thing (a default spelled out is no variant)."""
    model = FAULTS.params_model(name)
    return bool(model.model_validate(a) == model.model_validate(b))


def _run_no_op(name: str, raw: dict[str, Any], env: Env, journal: Path) -> str:
    """One fault with nothing injected; what went wrong, or "" when its effect check never said yes and its recovery
    check said yes after the revert."""
    real: Fault = FAULTS.get(name)()  # type: ignore[assignment]
    params = real.Params.model_validate(raw)
    fault = no_op_of(real, params)
    step = resolve(fault, params, env.nodes.list_nodes(), target=_node(env.cluster, real), duration=1)
    result = run_fault(env, step, journal=Journal(journal))
    shown = f"{name}({', '.join(f'{k}={v}' for k, v in raw.items())})"
    print(
        f"\n{shown} as a no-op: {observed_words(result.fact_check.to_dict())}; errors {result.errors}, failures "
        f"{result.failures}{measured(fault)}"
    )
    if result.failures:
        return f"{shown}: {result.failures}"
    if result.effect_s is not None:
        return f"{shown}: the effect check said yes with nothing injected"
    return "" if result.recovery_s is not None else f"{shown}: no recovery with nothing injected: {result.errors}"


def no_op_groups(variants: dict[str, list[dict[str, Any]]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """What runs side by side: a fault's variants one after another, as they share what they make (a Deployment, a
    probe pod); controller-stuck's each on its own, as each controller's probe is its own."""
    return [
        group
        for name, found in variants.items()
        for group in ([(name, [v]) for v in found] if name == ControllerStuck.name else [(name, found)])
    ]


def _run_no_ops(name: str, variants: list[dict[str, Any]], env: Env, tmp_path: Path) -> list[str]:
    return [_run_no_op(name, raw, env, tmp_path / f"{name}-{abs(hash(str(raw)))}.jsonl") for raw in variants]


def test_every_variants_effect_check_says_no_when_its_injection_is_a_no_op(env: Env, tmp_path: Path) -> None:
    """Every no-op control of every variant the catalog runs, the faults side by side: with nothing injected they
    meet nowhere. The other half of each control (the recovery check says no while the real fault holds) is every
    run's fact check (test_catalog.py)."""
    variants = no_op_variants()
    groups = no_op_groups(variants)
    with ThreadPoolExecutor(len(groups)) as pool:
        found = [f for fs in pool.map(lambda g: _run_no_ops(g[0], g[1], env, tmp_path), groups) for f in fs]
    print(f"\n{sum(len(v) for v in variants.values())} no-op controls of {len(variants)} faults")
    assert not any(found), [f for f in found if f]
    wait_healthy(env)
