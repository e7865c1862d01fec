"""The revert contract on the real cluster: chaoskit SIGKILLed at every point of its run loop leaves nothing broken
past the deadline; a revert that fails is retried by the node's switch until it can succeed; a revert that needs the
API server heals once another fault stops holding the API server down.

chaoskit is stopped at an exact point by CHAOSKIT_TEST_KILL_AT (read only by tests: the engine SIGKILLs itself there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from chaoskit.components.kube_proxy import running_min_sync_period
from chaoskit.deadman import Switch, arm, armed, attempts
from chaoskit.env import Env
from chaoskit.faults.apiserver import ETCD_TAG
from chaoskit.faults.base import local_healthz
from chaoskit.faults.kube_proxy import KubeProxySlowSync, SlowSyncParams
from chaoskit.journal import Injection, Journal
from chaoskit.seams.kube import Kube
from chaoskit.seams.nodeexec import DockerNodeExec, named
from chaoskit.seams.shell import SubprocessRunner
from tests.e2e.conftest import chaoskit, finished, process_state
from tests.e2e.radius import W1, WATCHES_CLUSTER, on_node, touches
from tests.e2e.test_faults import wait_healthy
from tests.e2e.test_killed_runs import _wait

NODES = DockerNodeExec(SubprocessRunner())


def _killed_at(point: str, fault: str, journal: Path, *args: str) -> Injection:
    """`chaoskit inject` that SIGKILLs itself at `point`; returns the injection its journal left pending."""
    done = subprocess.run(
        [sys.executable, "-m", "chaoskit", "inject", fault, "--journal", str(journal), *args],
        env={**os.environ, "CHAOSKIT_TEST_KILL_AT": point},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == -9, f"chaoskit was not killed at {point}: exit {done.returncode}\n{done.stderr[-2000:]}"
    (inj,) = Journal(journal).pending()
    return inj


def _revert_leaves_nothing(journal: Path, cluster: str) -> None:
    done = chaoskit("revert", str(journal), "--cluster", cluster)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "left:" not in done.stdout
    assert Journal(journal).pending() == []


def _etcd_rules(node: str) -> int:
    out = NODES.run(named(node), ["sh", "-c", f"iptables -S OUTPUT | grep -c -- {ETCD_TAG} || true"]).stdout
    return int(out.strip() or 0)


def _api_ready(env: Env, node: str) -> bool:
    return local_healthz(env, named(node), 6443, "/readyz")


def _exists(node: str, path: str) -> bool:
    return NODES.run(named(node), ["test", "-e", path], check=False).returncode == 0


def _scheduler_running(cp: str) -> bool:
    return NODES.run(named(cp), ["pgrep", "-x", "kube-scheduler"], check=False).returncode == 0


def _injecting(fault: str, cluster: str, journal: Path, *args: str) -> subprocess.Popen[str]:
    """`chaoskit inject` running, its switch's deadline far off (600 s): the test, not the deadline, decides."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chaoskit",
            "inject",
            fault,
            "--cluster",
            cluster,
            *args,
            "--deadline",
            "600",
            "--journal",
            str(journal),
            "-o",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


MANIFESTS = "/etc/kubernetes/manifests"
READ_ONLY = f"mount --bind {MANIFESTS} {MANIFESTS} && mount -o remount,bind,ro {MANIFESTS}"


def test_a_failed_revert_is_retried_by_the_switch_until_the_obstacle_is_gone(
    cluster: str, kube: Kube, tmp_path: Path
) -> None:
    cp, journal = f"{cluster}-control-plane", tmp_path / "obstacle.jsonl"
    # it runs before the kill-point tests, whose etcd outages cost the scheduler its lease: a scheduler in the
    # kubelet's crash-loop back-off must not be taken for the fault in place
    wait_healthy(Env(kube, NODES, cluster))
    proc = _injecting("scheduler.down", cluster, journal, "--duration", "10")
    try:
        _wait(
            "the scheduler's manifest to be parked and the scheduler to stop",
            lambda: not _exists(cp, f"{MANIFESTS}/kube-scheduler.yaml") and not _scheduler_running(cp),
            60,
        )
        NODES.run(named(cp), ["sh", "-c", READ_ONLY])  # the parked manifest cannot go back: its folder is read-only
        try:
            out, err = finished(proc, 120)
            assert proc.returncode == 4, f"a failed revert is chaoskit's failure (exit 4)\n{out}\n{err[-2000:]}"
            assert "Read-only file system" in out and "retries it on the node" in out
            (inj,) = Journal(journal).pending()
            switch = Switch(inj.id, named(cp), inj.revert, 0)
            # the switch's first attempt comes at once, the next 2 s after it failed: two within the 6 s they took
            _wait("the switch's second attempt", lambda: len(attempts(NODES, switch)) >= 2, 6)
            failing = attempts(NODES, switch)
            assert len(failing) >= 2 and all(a.endswith("exit 1") for a in failing), failing
            assert inj.id in armed(NODES, named(cp)), "a failed revert never disarms the switch"
            assert not _scheduler_running(cp)
            blocked = chaoskit("revert", str(journal), "--cluster", cluster)
            assert blocked.returncode == 4 and f"left: scheduler.down on {cp}" in blocked.stdout, blocked.stdout
        finally:
            lifted = time.time()
            NODES.run(named(cp), ["umount", MANIFESTS], check=False)
    finally:
        if proc.poll() is None:
            proc.kill()
    _wait("the switch to bring the scheduler back", lambda: _scheduler_running(cp), 90)
    log = attempts(NODES, switch)
    assert log[-1].endswith("exit 0") and all(a.endswith("exit 1") for a in log[:-1])
    assert inj.id not in armed(NODES, named(cp))
    print(
        f"\nthe switch tried {len(log)} times ({', '.join(a.split()[0][11:19] for a in log)}); "
        f"healed {time.time() - lifted:.1f}s after the obstacle was lifted"
    )
    _revert_leaves_nothing(journal, cluster)
    assert attempts(NODES, switch) == [], "chaoskit revert disarms: the switch's files are gone"


# On the node's PATH ahead of /usr/bin: a pkill whose SIGCONT does nothing, as if something kept the process stopped
NO_CONT = "/usr/local/bin/pkill"
NO_CONT_SCRIPT = '#!/bin/sh\ncase "$1" in -CONT) exit 0;; esac\nexec /usr/bin/pkill "$@"\n'


@touches(on_node("kube-proxy", W1), on_node("kubelet", W1), WATCHES_CLUSTER)
def test_a_revert_that_leaves_its_component_faulted_fails_and_the_switch_heals_it_once_it_can(
    cluster: str, kube: Kube, tmp_path: Path
) -> None:
    worker, journal = f"{cluster}-worker", tmp_path / "still-frozen.jsonl"
    wait_healthy(Env(kube, NODES, cluster))
    proc = _injecting("kube-proxy.freeze", cluster, journal, "--node", worker, "--duration", "5")
    try:
        _wait("kube-proxy to be stopped", lambda: process_state(worker, "kube-proxy") == "T", 60)
        NODES.run(named(worker), ["sh", "-c", f"cat > {NO_CONT} && chmod 755 {NO_CONT}"], input=NO_CONT_SCRIPT.encode())
        try:
            out, err = finished(proc, 120)
            assert proc.returncode == 4, f"a revert that thawed nothing is chaoskit's failure\n{out}\n{err[-2000:]}"
            assert "retries it on the node" in out, out
            (inj,) = Journal(journal).pending()
            switch = Switch(inj.id, named(worker), inj.revert, 0)
            # the switch's first attempt comes at once, the next 2 s after it failed: two within the 6 s they took
            _wait("the switch's second attempt", lambda: len(attempts(NODES, switch)) >= 2, 6)
            failing = attempts(NODES, switch)
            assert len(failing) >= 2 and all(a.endswith("exit 1") for a in failing), failing
            assert process_state(worker, "kube-proxy") == "T", "still frozen: the revert said so rather than passing"
        finally:
            lifted = time.time()
            NODES.run(named(worker), ["rm", "-f", NO_CONT], check=False)
    finally:
        if proc.poll() is None:
            proc.kill()
    _wait("the switch to thaw kube-proxy", lambda: process_state(worker, "kube-proxy") not in ("T", ""), 60)
    _wait(
        "the switch to record its success",
        lambda: attempts(NODES, switch)[-1:] != [] and attempts(NODES, switch)[-1].endswith("exit 0"),
        30,
    )
    assert inj.id not in armed(NODES, named(worker))
    print(
        f"\nthe switch thawed kube-proxy {time.time() - lifted:.1f}s after the obstacle was lifted, "
        f"after {len(attempts(NODES, switch))} attempts"
    )
    _revert_leaves_nothing(journal, cluster)
    wait_healthy(Env(kube, NODES, cluster))


def test_a_revert_needing_the_api_heals_after_the_api_server_comes_back(
    cluster: str, kube: Kube, tmp_path: Path
) -> None:
    """slow-sync's revert needs the API server; apiserver.down holds it down past slow-sync's deadline.

    It runs before the kill points: the new kube-proxy pods of the revert wait for the scheduler (DaemonSet pods are
    scheduled), which every etcd outage makes exit, and which comes back under a growing crash-loop back-off."""
    env, cp = Env(kube, NODES, cluster), f"{cluster}-control-plane"
    slow_journal, down_journal = tmp_path / "slow.jsonl", tmp_path / "down.jsonl"
    before = {n: running_min_sync_period(env.nodes, named(n)) for n in _nodes(cluster)}
    every_line = f"applied-{len(KubeProxySlowSync().plan(named(cp), SlowSyncParams()).apply)}"  # fully injected
    # deadlines as short as the two injections allow (about 10 s together), so the outage lasts no longer than needed
    slow = _killed_at(every_line, "kube-proxy.slow-sync", slow_journal, "--cluster", cluster, "--deadline", "24")
    down = _killed_at("holding", "apiserver.down", down_journal, "--cluster", cluster, "--deadline", "34")
    assert down.deadline_at > slow.deadline_at
    assert time.time() < slow.deadline_at, "the API server must be down before slow-sync's deadline comes"
    switch = Switch(slow.id, named(cp), slow.revert, 0)
    _wait(
        "slow-sync's switch to fail while the API server is down",
        lambda: len(attempts(NODES, switch)) >= 1,
        slow.deadline_at - time.time() + 30,
    )
    assert attempts(NODES, switch)[0].endswith("exit 1")
    _wait(
        "both switches to heal",
        lambda: _api_ready(env, cp) and slow.id not in armed(NODES, named(cp)),
        down.deadline_at - time.time() + 180,
    )
    log = attempts(NODES, switch)
    assert log[-1].endswith("exit 0")
    wait_healthy(env)
    _wait(
        "every kube-proxy back on its own minSyncPeriod",
        lambda: {n: running_min_sync_period(env.nodes, named(n)) for n in _nodes(cluster)} == before,
        120,
    )
    for journal in (slow_journal, down_journal):
        _revert_leaves_nothing(journal, cluster)
    print(
        f"\nslow-sync's switch tried {len(log)} times while the API server was down "
        f"({', '.join(a.split()[0][11:19] for a in log)}); healed {time.time() - slow.deadline_at:.0f}s after "
        f"its deadline, {time.time() - down.deadline_at:.0f}s after the API server's"
    )


# etcd-timeout: three apply lines (a check, then two DROP rules) and three revert lines, so there is a "between"
# in both; the kill at applied-2 leaves half the fault in place (one rule), reverting leaves the other half.
POINTS = ["journaled", "armed", "applied-2", "holding", "reverting"]
DEADLINE = 10.0  # the last kill point (reverting) comes about 3 s in: a 2 s hold after a 1-2 s effect


@pytest.mark.parametrize("point", POINTS)
def test_chaoskit_killed_at_each_point_leaves_the_node_healthy_by_the_deadline(
    point: str, cluster: str, kube: Kube, tmp_path: Path
) -> None:
    env, cp, journal = Env(kube, NODES, cluster), f"{cluster}-control-plane", tmp_path / "killed.jsonl"
    inj = _killed_at(
        point, "apiserver.etcd-timeout", journal, "--cluster", cluster, "--duration", "2", "--deadline", str(DEADLINE)
    )
    killed = time.time()
    left = _etcd_rules(cp)
    _wait(
        "no etcd DROP rule left and the switch done",
        lambda: _etcd_rules(cp) == 0 and inj.id not in armed(NODES, named(cp)),
        max(0.0, inj.deadline_at - time.time()) + 60,
    )
    healed = time.time()
    assert healed <= inj.deadline_at + 20, f"healed {healed - inj.deadline_at:.0f}s after the deadline"
    # the API server's etcd client reconnects under gRPC's back-off (seconds to ~20 s after a 25 s outage)
    _wait("the API server ready", lambda: _api_ready(env, cp), 60)
    ready = time.time()
    _revert_leaves_nothing(journal, cluster)
    print(
        f"\nkilled at {point}: {left} DROP rule(s) left at the kill; healed {healed - killed:.1f}s after the kill, "
        f"{healed - inj.deadline_at:+.1f}s from the deadline; API ready {ready - healed:.1f}s later"
    )


def _nodes(cluster: str) -> list[str]:
    return [f"{cluster}-{n}" for n in ("control-plane", "worker", "worker2")]


@touches(on_node("deadman", W1))
def test_a_switch_that_gives_up_is_reported_by_diagnose(cluster: str) -> None:
    node = f"{cluster}-worker"
    switch = Switch(
        uuid.uuid4().hex[:12],
        named(node),
        ("echo obstacle >&2; false",),
        2,
        fault="kube-proxy.freeze",
        run="/tmp/e2e-gave-up.jsonl",
        retry_for_s=0,
    )
    arm(NODES, switch)
    try:
        _wait("the switch to give up", lambda: _exists(node, switch.failed_path), 30)
        done = chaoskit("diagnose", "reverts", "-o", "json", "--cluster", cluster)
        assert done.returncode == 1, done.stderr
        report = json.loads(done.stdout)["diagnosis"]
        titles = [f["title"] for r in report["reports"] if r["subject"] == node for f in r["findings"]]
        assert any(
            "a chaoskit revert failed here: kube-proxy.freeze" in t and "/tmp/e2e-gave-up.jsonl" in t for t in titles
        ), titles
    finally:
        NODES.run(named(node), switch.disarm_argv(), check=False)


def test_a_failed_inject_is_chaoskits_failure_and_leaves_nothing(cluster: str, kube: Kube, tmp_path: Path) -> None:
    cp, journal = f"{cluster}-control-plane", tmp_path / "inject.jsonl"
    # after the kill-point tests' etcd outages the scheduler may be in the kubelet's crash-loop back-off: the fact
    # check would then rightly find scheduler.down "in effect" before the injection and inject nothing
    wait_healthy(Env(kube, NODES, cluster))
    parked = "/etc/kubernetes/chaoskit-parked"
    NODES.run(
        named(cp),
        ["sh", "-c", f"mkdir -p {parked} && mount --bind {parked} {parked} && mount -o remount,bind,ro {parked}"],
    )
    try:  # scheduler.down cannot park the manifest: its apply fails, the manifest stays where it was
        done = chaoskit("inject", "scheduler.down", "--cluster", cluster, "--duration", "5", "--journal", str(journal))
    finally:
        NODES.run(named(cp), ["umount", parked], check=False)
    assert done.returncode == 4, f"a failed inject is exit 4, not a deviation\n{done.stdout}\n{done.stderr[-2000:]}"
    assert "Read-only file system" in done.stdout
    assert _exists(cp, f"{MANIFESTS}/kube-scheduler.yaml"), "the manifest stays where it was"
    (injected,) = [e.data["id"] for e in Journal(journal).entries() if e.kind == "injection"]
    assert Journal(journal).pending() == [] and injected not in armed(NODES, named(cp))
