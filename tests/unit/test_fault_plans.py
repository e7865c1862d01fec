"""Fault plans are exact, pure and reversible: what --dry-run shows is what runs."""

from __future__ import annotations

import inspect
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from chaoskit.env import Env
from chaoskit.faults.apiserver import (
    ApiServerCertExpired,
    ApiServerDown,
    EtcdTimeout,
    WatchLeak,
    WatchLeakParams,
    _watch_script,
)
from chaoskit.faults.base import Fault
from chaoskit.faults.controller_manager import ControllerManagerDown, ControllerManagerHung
from chaoskit.faults.kube_proxy import (
    KubeProxyFlushRules,
    KubeProxyFrozen,
    KubeProxySlowSync,
    SlowSyncParams,
    go_duration,
    slow_sync_sed,
)
from chaoskit.faults.kubelet import (
    ContainerRuntimeUnresponsive,
    DiskPressure,
    DiskPressureParams,
    KubeletCertExpired,
    KubeletStopped,
)
from chaoskit.faults.scheduler import SchedulerDown, Unschedulable, UnschedulableParams, unschedulable_deployment
from chaoskit.model.duration import parse_duration
from chaoskit.model.params import NoParams
from chaoskit.registry import FAULTS, load_catalog
from chaoskit.seams.certs import expired_check, expired_copy
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import VERIFY_TRIES, FakeNodeExec, Node
from chaoskit.seams.shell import Completed, FakeRunner

load_catalog()

ALL = [
    SchedulerDown(),
    ControllerManagerDown(),
    ControllerManagerHung(),
    KubeletStopped(),
    ContainerRuntimeUnresponsive(),
    KubeProxyFrozen(),
]


@pytest.mark.parametrize("fault", ALL, ids=lambda f: f.name)
def test_every_plan_names_its_fault_and_node_and_has_a_revert(fault: Fault) -> None:
    plan = fault.plan(Node("chaoskit-worker", "worker"), NoParams())
    assert plan.fault == fault.name and plan.node == Node("chaoskit-worker", "worker")
    assert plan.apply and plan.revert and plan.summary
    assert fault.name.split(".")[0] == fault.component


@pytest.mark.parametrize("fault", ALL, ids=lambda f: f.name)
def test_every_line_is_valid_shell(fault: Fault) -> None:
    plan = fault.plan(Node("n", "worker"), NoParams())
    for line in plan.apply + plan.revert:
        assert subprocess.run(["sh", "-n", "-c", line]).returncode == 0, line


def test_scheduler_down_parks_the_static_pod_manifest_and_puts_it_back() -> None:
    plan = SchedulerDown().plan(Node("chaoskit-control-plane", "control-plane"), NoParams())
    assert (
        plan.apply[-1]
        == "mv /etc/kubernetes/manifests/kube-scheduler.yaml /etc/kubernetes/chaoskit-parked/kube-scheduler.yaml"
    )
    assert (
        "mv /etc/kubernetes/chaoskit-parked/kube-scheduler.yaml /etc/kubernetes/manifests/kube-scheduler.yaml"
        in plan.revert[0]
    )


def test_static_pod_revert_is_idempotent(tmp_path) -> None:  # type: ignore[no-untyped-def]
    plan = SchedulerDown().plan(Node("n", "worker"), NoParams())
    revert = plan.revert[0].replace("/etc/kubernetes", str(tmp_path))
    (tmp_path / "chaoskit-parked").mkdir()
    (tmp_path / "manifests").mkdir()
    (tmp_path / "chaoskit-parked" / "kube-scheduler.yaml").write_text("x")
    for _ in range(2):  # the dead-man switch may run after a manual revert
        assert subprocess.run(["sh", "-c", revert]).returncode == 0
    assert (tmp_path / "manifests" / "kube-scheduler.yaml").read_text() == "x"


@pytest.mark.parametrize("fault", [SchedulerDown(), ControllerManagerDown(), ApiServerDown()], ids=lambda f: f.name)
def test_a_static_pod_revert_fails_until_the_manifest_is_back_and_nothing_is_parked(
    tmp_path: Path, fault: Fault
) -> None:
    plan = fault.plan(Node("n", "worker"), NoParams())
    (undo,), (verify,) = (
        [line.replace("/etc/kubernetes", str(tmp_path)) for line in lines] for lines in (plan.undo, plan.verify)
    )
    (tmp_path / "chaoskit-parked").mkdir()
    (tmp_path / "manifests").mkdir()
    parked = tmp_path / "chaoskit-parked" / f"{fault.process}.yaml"  # type: ignore[attr-defined]
    parked.write_text("x")
    assert _run(tmp_path, verify).returncode != 0, "parked: the fault holds"
    (tmp_path / "manifests" / parked.name).write_text("x")
    assert _run(tmp_path, verify).returncode != 0, "a manifest back, but a parked copy beside it"
    assert _run(tmp_path, undo).returncode == 0 and _run(tmp_path, verify).returncode == 0
    (tmp_path / "manifests" / parked.name).unlink()
    assert _run(tmp_path, undo).returncode == 0, "nothing parked: the undo has nothing to do"
    assert _run(tmp_path, verify).returncode != 0, "yet no manifest is in place: never read as healed"


def test_frozen_processes_are_stopped_and_continued_by_exact_name() -> None:
    plan = KubeProxyFrozen().plan(Node("chaoskit-worker", "worker"), NoParams())
    assert plan.apply == ("pkill -STOP -x kube-proxy",)
    (thaw,) = plan.undo
    assert thaw.startswith('pkill -CONT -x kube-proxy; for p in $(pgrep -x kube-proxy); do pkill -CONT -P "$p"; done;')
    assert len(plan.verify) == 1 and "pgrep -x kube-proxy" in plan.verify[0]


@pytest.mark.parametrize(("state", "child", "fails"), [("Sl", "S", False), ("T", "S", True), ("Sl", "T", True)])
def test_a_thaw_fails_while_the_process_or_a_child_is_still_stopped(
    tmp_path: Path, state: str, child: str, fails: bool
) -> None:
    _bin(tmp_path, "pkill", "exit 0")  # its SIGCONT did nothing: what the line reads afterwards decides
    _bin(tmp_path, "pgrep", 'case "$1" in -x) echo 41;; -P) echo 42;; esac')
    _bin(tmp_path, "ps", f'case "$4" in 41) echo {state};; 42) echo {child};; esac')
    thaw = " ; ".join(KubeProxyFrozen().plan(Node("chaoskit-worker", "worker"), NoParams()).revert)
    assert (_run(tmp_path, thaw).returncode != 0) is fails
    _bin(tmp_path, "pgrep", "exit 1")  # no kube-proxy at all (restarted meanwhile): nothing is stopped
    assert _run(tmp_path, thaw).returncode == 0


@pytest.mark.parametrize(
    ("pgrep", "ps"),
    [
        ("exit 3", "echo S"),  # pgrep cannot read /proc: no answer is not "nothing stopped"
        ('case "$1" in -x) echo 41;; -P) exit 2;; esac', "echo S"),  # the children's listing failed
        ('case "$1" in -x) echo 41;; esac; [ "$1" = -x ]', "exit 127"),  # no ps at all
    ],
)
def test_a_thaw_fails_when_pgrep_or_ps_cannot_say(tmp_path: Path, pgrep: str, ps: str) -> None:
    _bin(tmp_path, "pkill", "exit 0")
    _bin(tmp_path, "pgrep", pgrep)
    _bin(tmp_path, "ps", ps)
    (verify,) = KubeProxyFrozen().plan(Node("chaoskit-worker", "worker"), NoParams()).verify
    done = _run(tmp_path, verify)
    assert done.returncode != 0 and "could not say" in done.stderr


def test_long_process_names_are_matched_by_their_15_character_kernel_name() -> None:
    plan = ControllerManagerHung().plan(Node("chaoskit-control-plane", "control-plane"), NoParams())
    assert plan.apply == ("pkill -STOP -x kube-controller",)


# --- the faults added with the catalog: apiserver, scheduler.unschedulable, kubelet, kube-proxy -------------------

CATALOG = [cls() for _, cls in FAULTS.items()]  # every registered fault, whatever its module
NEW = [
    ApiServerDown(),
    EtcdTimeout(),
    ApiServerCertExpired(),
    WatchLeak(),
    Unschedulable(),
    DiskPressure(),
    KubeletCertExpired(),
    KubeProxyFlushRules(),
    KubeProxySlowSync(),
]
VARIANTS = [
    *((Unschedulable(), UnschedulableParams(reason=r)) for r in ("resources", "taint", "affinity")),
    (WatchLeak(), WatchLeakParams(watches=1)),
    (WatchLeak(), WatchLeakParams(watches=1234)),
    (Unschedulable(), UnschedulableParams(reason="taint", node="chaoskit-worker2")),
    (KubeProxySlowSync(), SlowSyncParams(min_sync_period=90)),
    (KubeProxySlowSync(), SlowSyncParams(min_sync_period=7.5)),
    (DiskPressure(), DiskPressureParams(free_percent=2.5)),
]


@pytest.mark.parametrize("fault", NEW, ids=lambda f: f.name)
def test_a_fault_summary_is_one_whole_line_because_faults_list_shows_only_that(fault: Fault) -> None:
    lines = (inspect.getdoc(fault) or "").split("\n")
    assert lines[0].endswith(".") and len(lines) > 2 and lines[1] == ""


def test_faults_list_in_a_pipe_cuts_no_fault_name_and_no_summary() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "chaoskit", "faults", "list"], capture_output=True, text=True, check=True
    ).stdout
    assert "…" not in out and "│" not in out, "a pipe gets plain columns"
    lines = {line.split("   ", 1)[0]: line for line in out.splitlines()[1:]}
    for fault in CATALOG:
        first = " ".join((inspect.getdoc(fault) or "").split("\n\n")[0].split())  # the whole first paragraph
        assert fault.name in lines and lines[fault.name].endswith(first), (fault.name, lines.get(fault.name))


@pytest.mark.parametrize("fault", CATALOG, ids=lambda f: f.name)
def test_every_registered_fault_plans_valid_shell_with_default_params(fault: Fault) -> None:
    assert fault.Params.model_config.get("extra") == "forbid" and fault.Params.model_config.get("frozen")
    assert 0 < fault.effect_timeout <= 300 and 0 < fault.recovery_timeout <= 300
    plan = fault.plan(Node("chaoskit-worker", "worker"), NoParams())  # NoParams: what a caller without params passes
    assert plan.fault == fault.name and plan.apply and plan.revert and plan.summary
    assert fault.name.split(".")[0] == fault.component
    for line in plan.apply + plan.revert:
        assert subprocess.run(["sh", "-n", "-c", line]).returncode == 0, line


@pytest.mark.parametrize(("fault", "params"), VARIANTS, ids=lambda v: getattr(v, "name", repr(v)))
def test_plans_for_non_default_params_are_valid_shell(fault: Fault, params: BaseModel) -> None:
    plan = fault.plan(Node("chaoskit-control-plane", "control-plane"), params)
    assert plan.params == params
    for line in plan.apply + plan.revert:
        assert subprocess.run(["sh", "-n", "-c", line]).returncode == 0, line


@pytest.mark.parametrize("fault", CATALOG, ids=lambda f: f.name)
def test_no_revert_line_exits_because_the_dead_man_switch_runs_them_all_in_one_script(fault: Fault) -> None:
    for line in fault.plan(Node("n", "worker"), NoParams()).revert:
        assert not re.search(r"\bexit\b", line), line


def test_params_read_camel_case_from_playbooks_and_refuse_unknown_keys() -> None:
    assert SlowSyncParams.model_validate({"minSyncPeriod": "1m30s"}).min_sync_period == 90.0
    assert SlowSyncParams(min_sync_period="45s").min_sync_period == 45.0  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        UnschedulableParams.model_validate({"reason": "gravity"})
    with pytest.raises(ValidationError):
        WatchLeakParams.model_validate({"watches": 10, "watchers": 10})
    with pytest.raises(ValidationError):
        DiskPressureParams(free_percent=10)  # at the threshold: no pressure


def _bin(tmp_path: Path, name: str, body: str) -> None:
    """A fake command on PATH for running plan lines on this host."""
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def _run(tmp_path: Path, line: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "STATE": str(tmp_path / "state")}
    return subprocess.run(["sh", "-c", line], capture_output=True, text=True, env=env)


# A fake iptables over a text file: -I/-D/-S of rules, -N/-X/-F of chains (enough for the plans' lines).
FAKE_IPTABLES = r"""
set -- $(printf '%s\n' "$@" | grep -v -x -e -w -e 5)
table=filter; [ "$1" = -t ] && { table=$2; shift 2; }
touch "$STATE"; op=$1; chain=${2:-}; shift; [ $# -gt 0 ] && shift; rule="$table $chain $*"
case $op in
  -S) [ -n "$chain" ] || { grep "^chain $table " "$STATE" | sed "s/^chain $table /-N /"; exit 0; } ;;
esac
case $op in
  -I) echo "$rule" >> "$STATE" ;;
  -D) grep -q -x -F -- "$rule" "$STATE" || exit 1
      grep -v -x -F -- "$rule" "$STATE" > "$STATE.n"; mv "$STATE.n" "$STATE" ;;
  -S) grep -q -x -F "chain $table $chain" "$STATE" || [ -n "$(grep "^$table $chain " "$STATE")" ] || exit 1
      echo "-N $chain"; grep "^$table $chain " "$STATE" | sed "s/^$table /-A /" ;;
  -F) grep -v "^$table $chain " "$STATE" > "$STATE.n"; mv "$STATE.n" "$STATE" ;;
  -X) grep -q -x -F "chain $table $chain" "$STATE" || exit 1
      grep -v -x -F "chain $table $chain" "$STATE" > "$STATE.n"; mv "$STATE.n" "$STATE" ;;
esac
"""


def test_etcd_timeout_drops_both_directions_and_its_revert_deletes_exactly_its_rules(tmp_path: Path) -> None:
    _bin(tmp_path, "iptables", FAKE_IPTABLES)
    _bin(tmp_path, "grep", 'exec /bin/grep "$@"')
    (tmp_path / "state").write_text("filter OUTPUT -j KUBE-FIREWALL\n")
    plan = EtcdTimeout().plan(Node("chaoskit-control-plane", "control-plane"), NoParams())
    assert any("--dport 2379" in line and "-j DROP" in line for line in plan.apply)
    assert any("--sport 2379" in line and "-j DROP" in line for line in plan.apply)
    for line in plan.apply[1:] + plan.apply[1:]:  # inserted twice: the revert loops until none is left
        assert _run(tmp_path, line).returncode == 0
    assert (tmp_path / "state").read_text().count("chaoskit-etcd-timeout") == 4
    for _ in range(2):  # the dead-man switch may run after a manual revert
        for line in plan.revert:
            assert _run(tmp_path, line).returncode == 0, line
    assert (tmp_path / "state").read_text() == "filter OUTPUT -j KUBE-FIREWALL\n"


# A fake nft over the same file: the service-ips map's elements are its "nft-element" lines.
FAKE_NFT = r"""
case "$1 $2" in
  "list tables") echo "table ip nat"; grep -q -x "nft-map" "$STATE" && echo "table ip kube-proxy"; true ;;
  "list map") grep -q -x "nft-map" "$STATE" || exit 1; echo "map service-ips {"
              grep "^nft-element " "$STATE" | sed "s/^nft-element /  /"; echo "}" ;;
  "flush map") grep -v "^nft-element " "$STATE" > "$STATE.n"; mv "$STATE.n" "$STATE" ;;
esac
"""


# A fake systemd for the unit that keeps the rules flushed: systemd-run records its command, systemctl stops it.
FAKE_SYSTEMD_RUN = 'echo "$@" > "$STATE.unit"'
FAKE_SYSTEMCTL = r"""
case "$1" in
  stop) rm -f "$STATE.unit" ;;
  is-active) [ -e "$STATE.unit" ] || exit 3 ;;
esac
"""


def _fake_systemd(tmp_path: Path) -> None:
    _bin(tmp_path, "systemd-run", FAKE_SYSTEMD_RUN)
    _bin(tmp_path, "systemctl", FAKE_SYSTEMCTL)


def test_flush_rules_refuses_a_mode_it_does_not_know(tmp_path: Path) -> None:
    _bin(tmp_path, "curl", "echo ipvs")
    done = _run(tmp_path, KubeProxyFlushRules().plan(Node("chaoskit-worker", "worker"), NoParams()).apply[0])
    assert done.returncode != 0 and "mode 'ipvs'" in done.stderr


def test_flush_rules_in_iptables_mode_flushes_the_chain_and_its_revert_drops_only_present_canaries(
    tmp_path: Path,
) -> None:
    _bin(tmp_path, "iptables", FAKE_IPTABLES)
    _bin(tmp_path, "nft", FAKE_NFT)
    _bin(tmp_path, "curl", "echo iptables")
    _bin(tmp_path, "pkill", 'echo killed >> "$STATE.pkill"')
    _fake_systemd(tmp_path)
    (tmp_path / "state").write_text("nat KUBE-SERVICES -j KUBE-SVC-X\nchain mangle KUBE-PROXY-CANARY\n")
    plan = KubeProxyFlushRules().plan(Node("chaoskit-worker", "worker"), NoParams())
    assert _run(tmp_path, plan.apply[0]).returncode == 0
    assert (tmp_path / "state").read_text() == "chain mangle KUBE-PROXY-CANARY\n"
    # kube-proxy rewrites the chain on any endpoint change: a unit flushes it again while the fault holds
    assert "iptables -w 5 -t nat -F KUBE-SERVICES" in (tmp_path / "state.unit").read_text()
    for _ in range(2):  # the dead-man switch may run after a manual revert
        for line in plan.revert:
            assert _run(tmp_path, line).returncode == 0, line
    assert (tmp_path / "state").read_text() == ""
    assert not (tmp_path / "state.pkill").exists()
    assert not (tmp_path / "state.unit").exists(), "the revert stops the unit"


def test_flush_rules_in_nftables_mode_empties_the_map_and_its_revert_restarts_kube_proxy_once(tmp_path: Path) -> None:
    _bin(tmp_path, "iptables", FAKE_IPTABLES)
    _bin(tmp_path, "nft", FAKE_NFT)
    _bin(tmp_path, "curl", "echo nftables")
    refill = 'echo "nft-element 10.96.0.1 . tcp . 443 : goto s" >> "$STATE"'  # what a restarted kube-proxy does
    _bin(tmp_path, "pkill", f'echo "$@" >> "$STATE.pkill"; {refill}')
    _fake_systemd(tmp_path)
    (tmp_path / "state").write_text("nft-map\nnft-element 10.96.0.1 . tcp . 443 : goto s\n")
    plan = KubeProxyFlushRules().plan(Node("chaoskit-worker", "worker"), NoParams())
    assert _run(tmp_path, plan.apply[0]).returncode == 0
    assert (tmp_path / "state").read_text() == "nft-map\n"
    assert "nft flush map ip kube-proxy service-ips" in (tmp_path / "state.unit").read_text()
    for _ in range(2):  # a restarted kube-proxy refills the map, so the second revert leaves it alone
        for line in plan.revert:
            assert _run(tmp_path, line).returncode == 0, line
    assert (tmp_path / "state.pkill").read_text() == "-x kube-proxy\n"
    assert not (tmp_path / "state.unit").exists(), "the revert stops the unit"


def _no_wait(line: str) -> str:
    """A verify line that would wait for its tools to answer, asking them once."""
    return f"{VERIFY_TRIES}=1; {line}"  # as the hold's ask sets it


@pytest.mark.parametrize("mode", ["iptables", "nftables"])
def test_flush_rules_with_its_undo_removed_fails_to_revert_while_the_unit_keeps_flushing(
    tmp_path: Path, mode: str
) -> None:
    _bin(tmp_path, "iptables", FAKE_IPTABLES)
    _bin(tmp_path, "nft", FAKE_NFT)
    _bin(tmp_path, "curl", f"echo {mode}")
    _fake_systemd(tmp_path)
    map_ = "nft-map\nnft-element 10.96.0.1 . tcp . 443 : goto s\n" if mode == "nftables" else ""
    (tmp_path / "state").write_text(f"nat KUBE-SERVICES -j KUBE-SVC-X\nchain mangle KUBE-PROXY-CANARY\n{map_}")
    plan = KubeProxyFlushRules().plan(Node("chaoskit-worker", "worker"), NoParams())
    assert _run(tmp_path, plan.apply[0]).returncode == 0
    (verify,) = plan.undo_removed().revert
    done = _run(tmp_path, _no_wait(verify))
    assert done.returncode != 0 and "still active" in done.stderr


@pytest.mark.parametrize(
    "broken",
    [
        "exit 4",  # iptables cannot take its lock: no listing is no proof the rules come back
        'case "$*" in *mangle*) exit 1;; *) exit 0;; esac',  # the canary listing fails, KUBE-SERVICES lists nothing
    ],
)
def test_flush_rules_verify_fails_when_iptables_cannot_answer(tmp_path: Path, broken: str) -> None:
    _bin(tmp_path, "iptables", broken)
    _bin(tmp_path, "nft", "echo 'table ip nat'")
    _fake_systemd(tmp_path)
    (verify,) = KubeProxyFlushRules().plan(Node("chaoskit-worker", "worker"), NoParams()).verify
    done = _run(tmp_path, _no_wait(verify))
    assert done.returncode != 0 and "could not say" in done.stderr


def test_flush_rules_verify_in_nftables_mode_needs_the_map_listed_with_entries(tmp_path: Path) -> None:
    _fake_systemd(tmp_path)
    (verify,) = KubeProxyFlushRules().plan(Node("chaoskit-worker", "worker"), NoParams()).verify
    _bin(tmp_path, "nft", 'case "$1 $2" in "list tables") echo "table ip kube-proxy";; *) exit 1;; esac')
    assert _run(tmp_path, _no_wait(verify)).returncode != 0, "the map's listing failed"
    _bin(tmp_path, "nft", 'case "$1 $2" in "list tables") echo "table ip kube-proxy";; *) echo "map {";; esac')
    assert _run(tmp_path, _no_wait(verify)).returncode != 0, "listed, and empty: still flushed"
    _bin(tmp_path, "nft", 'case "$1 $2" in "list tables") echo "table ip kube-proxy";; *) echo "a : goto s";; esac')
    assert _run(tmp_path, _no_wait(verify)).returncode == 0


# A fake openssl: `x509 -checkend 0 -in FILE` passes unless the file says "expired".
FAKE_OPENSSL = 'for a; do f=$a; done; [ -r "$f" ] && ! grep -q expired "$f"'


def test_cert_swaps_are_reverted_idempotently(tmp_path: Path) -> None:
    _bin(tmp_path, "openssl", FAKE_OPENSSL)
    plan = ApiServerCertExpired().plan(Node("n", "worker"), NoParams())
    revert = [line.replace("/etc/kubernetes", str(tmp_path)) for line in plan.revert]
    (tmp_path / "pki").mkdir()
    (tmp_path / "chaoskit-parked").mkdir()
    (tmp_path / "pki" / "apiserver.crt").write_text("expired")
    (tmp_path / "chaoskit-parked" / "apiserver.crt").write_text("original")
    (tmp_path / "chaoskit-parked" / "apiserver.key").write_text("key")
    (verify,) = [line.replace("/etc/kubernetes", str(tmp_path)) for line in plan.undo_removed().revert]
    assert _run(tmp_path, verify).returncode != 0, "nothing undone: the expired certificate serves"
    for _ in range(2):
        for line in revert:
            assert _run(tmp_path, line).returncode == 0, line
    assert (tmp_path / "pki" / "apiserver.crt").read_text() == "original"
    assert (tmp_path / "pki" / "apiserver.key").read_text() == "key"
    (tmp_path / "pki" / "apiserver.crt").write_text("expired")  # no parked copy, yet the certificate served expired
    assert _run(tmp_path, verify).returncode != 0
    _bin(tmp_path, "openssl", "exit 127")
    (tmp_path / "pki" / "apiserver.crt").write_text("original")
    assert _run(tmp_path, verify).returncode != 0, "openssl cannot read it: no proof"


def test_cert_expired_refuses_to_overwrite_a_parked_original(tmp_path: Path) -> None:
    refuse = (
        ApiServerCertExpired().plan(Node("n", "worker"), NoParams()).apply[0].replace("/etc/kubernetes", str(tmp_path))
    )
    assert _run(tmp_path, refuse).returncode == 0
    (tmp_path / "chaoskit-parked").mkdir()
    (tmp_path / "chaoskit-parked" / "apiserver.crt").write_text("original")
    assert _run(tmp_path, refuse).returncode != 0


def test_kubelet_cert_revert_restores_the_symlink_and_restarts_kubelet_once(tmp_path: Path) -> None:
    _bin(tmp_path, "systemctl", 'echo "$@" >> "$STATE"')
    _bin(tmp_path, "openssl", FAKE_OPENSSL)
    plan = KubeletCertExpired().plan(Node("chaoskit-control-plane", "control-plane"), NoParams())
    revert = [line.replace("/var/lib/kubelet", str(tmp_path)) for line in plan.revert]
    pki = tmp_path / "pki"
    pki.mkdir()
    (pki / "kubelet-client-2026.pem").write_text("original")
    (pki / "kubelet-client-current.pem.chaoskit-parked").symlink_to(pki / "kubelet-client-2026.pem")
    (pki / "kubelet-client-current.pem").write_text("expired")
    (verify,) = [line.replace("/var/lib/kubelet", str(tmp_path)) for line in plan.undo_removed().revert]
    assert _run(tmp_path, verify).returncode != 0, "nothing undone: the original is still parked"
    for _ in range(2):
        for line in revert:
            assert _run(tmp_path, line).returncode == 0, line
    assert (pki / "kubelet-client-current.pem").is_symlink()
    assert (pki / "kubelet-client-current.pem").read_text() == "original"
    assert (tmp_path / "state").read_text() == "restart kubelet\n"


@pytest.mark.skipif(not shutil.which("openssl"), reason="needs openssl")
def test_expired_copy_keeps_subject_and_sans_and_is_signed_by_the_ca_but_expired(tmp_path: Path) -> None:
    def ssl(*args: str) -> str:
        return subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout

    ssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-subj",
        "/CN=kubernetes",
        "-days",
        "10",
    )
    ssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "srv.key",
        "-out",
        "srv.crt",
        "-subj",
        "/CN=kube-apiserver",
        "-addext",
        "subjectAltName=DNS:kubernetes,IP:10.96.0.1",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-days",
        "10",
    )
    line = expired_copy("srv.crt", "srv.key", "out.crt", ca_crt="ca.crt", ca_key="ca.key")
    done = subprocess.run(["sh", "-c", line], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert subprocess.run(["sh", "-c", expired_check("out.crt")], cwd=tmp_path).returncode == 0
    assert subprocess.run(["sh", "-c", expired_check("srv.crt")], cwd=tmp_path).returncode != 0
    shown = ssl("x509", "-in", "out.crt", "-noout", "-subject", "-ext", "subjectAltName")
    assert "CN = kube-apiserver" in shown and "DNS:kubernetes" in shown and "IP Address:10.96.0.1" in shown
    verify = subprocess.run(["openssl", "verify", "-CAfile", "ca.crt", "out.crt"], cwd=tmp_path, capture_output=True)
    assert verify.returncode != 0 and b"certificate has expired" in verify.stdout + verify.stderr
    ssl("verify", "-no_check_time", "-CAfile", "ca.crt", "out.crt")  # the CA signed it: only the dates are wrong


def test_disk_pressure_fills_to_the_asked_free_space_and_never_outside_its_own_filesystem(tmp_path: Path) -> None:
    _bin(tmp_path, "df", 'printf "  1B-blocks Avail\\n 4000000000 3800000000\\n"')
    _bin(tmp_path, "fallocate", 'echo "$@" > "$STATE"')
    _bin(tmp_path, "mountpoint", "exit 1")
    plan = DiskPressure().plan(Node("chaoskit-worker", "worker"), DiskPressureParams(free_percent=5))
    refused = _run(tmp_path, plan.apply[0])
    assert refused.returncode != 0 and "refusing" in refused.stderr
    assert _run(tmp_path, plan.apply[1]).returncode == 0
    size = 3_800_000_000 - 4_000_000_000 * 5 // 100
    assert (tmp_path / "state").read_text() == f"-l {size} /var/lib/kubelet/chaoskit-disk-pressure.fill\n"
    assert plan.undo == ("rm -f /var/lib/kubelet/chaoskit-disk-pressure.fill",)
    (verify,) = [line.replace("/var/lib/kubelet", str(tmp_path)) for line in plan.verify]
    (tmp_path / "chaoskit-disk-pressure.fill").write_text("x")
    assert _run(tmp_path, verify).returncode != 0, "the fill is still there"
    (tmp_path / "chaoskit-disk-pressure.fill").unlink()
    assert _run(tmp_path, verify).returncode == 0


KUBE_PROXY_CONFIGMAP = """\
apiVersion: v1
data:
  config.conf: |-
    configSyncPeriod: 0s
    iptables:
      minSyncPeriod: 1s
      syncPeriod: 0s
    nftables:
      minSyncPeriod: 0s
      syncPeriod: 0s
kind: ConfigMap
metadata:
  name: kube-proxy
  resourceVersion: "123"
"""


@pytest.mark.parametrize(("period", "sync_changed"), [(30.0, False), (90.0, True), (7.5, False)])
def test_slow_sync_sets_every_min_sync_period_and_keeps_sync_period_the_longer(
    tmp_path: Path, period: float, sync_changed: bool
) -> None:
    (tmp_path / "cm.yaml").write_text(KUBE_PROXY_CONFIGMAP)
    out = _run(tmp_path, f"{slow_sync_sed(period)} {tmp_path / 'cm.yaml'}").stdout
    rendered = go_duration(period)
    assert out.count(f"      minSyncPeriod: {rendered}\n") == 2
    assert out.count(f"      syncPeriod: {rendered}\n") == (2 if sync_changed else 0)
    assert "    configSyncPeriod: 0s\n" in out
    assert parse_duration(rendered) == period


def test_watch_leak_spreads_watches_over_curls_of_at_most_250_each() -> None:
    script = _watch_script(500)
    assert script.count("curl ") == 2 and "[3600-3849]" in script and "[3850-4099]" in script
    assert _watch_script(1).count("curl ") == 1 and "[3600-3600]" in _watch_script(1)
    assert _watch_script(251).count("curl ") == 2 and "[3850-3850]" in _watch_script(251)


def _node_env(answers: dict[str, str], objects: dict[str, Any] | None = None) -> Env:
    def responder(argv: tuple[str, ...]) -> Completed | None:
        script = argv[-1]
        for needle, out in answers.items():
            if needle in script:
                return Completed(argv, 0, out)
        return Completed(argv, 1, "")

    return Env(FakeKube(objects or {}), FakeNodeExec(FakeRunner(responder=responder)), "chaoskit")


def test_watch_leak_takes_effect_at_half_the_watches_above_baseline_and_recovers_near_it() -> None:
    plan = WatchLeak().plan(Node("cp", "control-plane"), WatchLeakParams(watches=100))
    assert WatchLeak().took_effect(_node_env({"baseline": "150\n200\n"}), plan)
    assert not WatchLeak().took_effect(_node_env({"baseline": "150\n199\n"}), plan)
    assert WatchLeak().recovered(_node_env({"baseline": "150\n160\n"}), plan)
    assert not WatchLeak().recovered(_node_env({"baseline": "150\n161\n"}), plan)
    assert not WatchLeak().recovered(_node_env({}), plan)  # a failed scrape is not a recovery


def test_etcd_timeout_effect_is_a_failing_etcd_check_or_a_timed_out_request() -> None:
    plan = EtcdTimeout().plan(Node("cp", "control-plane"), NoParams())
    assert EtcdTimeout().took_effect(
        _node_env({"readyz?verbose": "[+]ping ok\n[-]etcd failed: reason withheld\n"}), plan
    )
    assert not EtcdTimeout().took_effect(_node_env({"readyz?verbose": "[+]etcd ok\nreadyz check passed\n"}), plan)


def _pod(name: str, node: str = "") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"app": "chaoskit-unschedulable"}},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": "Pending"},
    }


def _event(pod: str, message: str) -> dict[str, Any]:
    return {"involvedObject": {"name": pod}, "reason": "FailedScheduling", "message": message}


def test_the_fake_api_applies_selectors_so_a_query_that_selects_nothing_finds_nothing() -> None:
    ns = "/api/v1/namespaces/chaoskit-faults"
    other = {"metadata": {"name": "x", "labels": {"app": "other"}}, "status": {"phase": "Pending"}}
    env = _node_env({}, {f"{ns}/pods/a": other, f"{ns}/events/1": {**_event("x", "m"), "reason": "Pulled"}})
    plan = Unschedulable().plan(Node("cp", "control-plane"), UnschedulableParams(reason="resources", replicas=1))
    assert env.kube.get(f"{ns}/pods", labelSelector="app=chaoskit-unschedulable")["items"] == []
    assert env.kube.get(f"{ns}/events", fieldSelector="reason=FailedScheduling")["items"] == []
    assert not Unschedulable().took_effect(env, plan), "another app's pending pod is not the fault's"
    with pytest.raises(ValueError, match="not one FakeKube can apply"):
        env.kube.get(f"{ns}/pods", labelSelector="app=~x")


def test_unschedulable_takes_effect_when_every_replica_is_pending_with_the_reason_in_its_event() -> None:
    ns = "/api/v1/namespaces/chaoskit-faults"
    plan = Unschedulable().plan(Node("cp", "control-plane"), UnschedulableParams(reason="resources", replicas=2))
    pods = {f"{ns}/pods/a": _pod("a"), f"{ns}/pods/b": _pod("b")}
    msg = "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    both = {f"{ns}/events/1": _event("a", msg), f"{ns}/events/2": _event("b", msg)}
    assert Unschedulable().took_effect(_node_env({}, {**pods, **both}), plan)
    assert not Unschedulable().took_effect(_node_env({}, {**pods, f"{ns}/events/1": _event("a", msg)}), plan)
    other = {f"{ns}/events/1": _event("a", "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity")}
    assert not Unschedulable().took_effect(_node_env({}, {**pods, **other}), plan)


def test_unschedulable_manifests_fail_for_their_reason_only() -> None:
    resources = unschedulable_deployment(UnschedulableParams(reason="resources"))["spec"]["template"]["spec"]
    assert resources["containers"][0]["resources"]["requests"]["cpu"] == "10000"
    assert "nodeSelector" not in resources and "affinity" not in resources
    taint = unschedulable_deployment(UnschedulableParams(reason="taint"))["spec"]["template"]["spec"]
    assert taint["nodeSelector"] == {"chaoskit.dev/unschedulable": "scheduler.unschedulable"}
    tolerated = {t["key"] for t in taint["tolerations"]}
    assert "node-role.kubernetes.io/control-plane" in tolerated and "node.kubernetes.io/not-ready" in tolerated
    assert "chaoskit.dev/unschedulable" not in tolerated and all(
        t["operator"] == "Exists" for t in taint["tolerations"]
    )
    assert "tolerations" not in resources
    dep = unschedulable_deployment(UnschedulableParams(reason="affinity"))
    assert dep["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    assert dep["spec"]["selector"]["matchLabels"] == {"app": "chaoskit-unschedulable"}
    for d in (dep,):
        assert d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Never"


# A fake kubectl for the revert: two nodes and their taint keys, the first with ours; a removal is recorded.
FAKE_KUBECTL_TAINTS = r"""
shift  # --kubeconfig
case "$1 $2" in
  "get nodes") case "$*" in *jsonpath*) printf 'w1 a chaoskit.dev/unschedulable\nw2 \n' ;; *) : ;; esac ;;
  "taint nodes") echo "$@" >> "$STATE" ;;
esac
"""


def test_unschedulable_revert_removes_its_taint_wherever_it_is_and_fails_while_any_is_left(tmp_path: Path) -> None:
    plan = Unschedulable().plan(Node("cp", "control-plane"), UnschedulableParams(reason="taint"))
    untaint = next(line for line in plan.revert if "NoSchedule-" in line)
    left = plan.verify[-1]
    assert plan.revert.index(untaint) < next(i for i, line in enumerate(plan.revert) if "unschedulable-" in line)
    _bin(tmp_path, "kubectl", FAKE_KUBECTL_TAINTS)
    assert _run(tmp_path, untaint).returncode == 0
    assert (tmp_path / "state").read_text().splitlines() == ["taint nodes w1 chaoskit.dev/unschedulable:NoSchedule-"]
    assert _run(tmp_path, left).returncode != 0, "w1 still has the taint (the fake never removes it)"
    _bin(tmp_path, "kubectl", "shift; case \"$*\" in *jsonpath*) printf 'w1 a\\nw2 \\n';; esac")
    assert _run(tmp_path, left).returncode == 0
    _bin(tmp_path, "kubectl", "echo 'The connection to the server was refused' >&2; exit 1")
    assert _run(tmp_path, untaint).returncode != 0 and _run(tmp_path, left).returncode != 0
    assert not any(
        "taint" in line for line in Unschedulable().plan(Node("cp", "control-plane"), UnschedulableParams()).revert
    )


# Two workers, not in order: the step's resolution pins `worker` to the first by name.
KIND_NODES = [
    Node("chaoskit-worker2", "worker"),
    Node("chaoskit-worker", "worker"),
    Node("chaoskit-control-plane", "control-plane"),
]


@pytest.mark.parametrize(("node", "tainted"), [("worker", "chaoskit-worker"), ("chaoskit-worker2", "chaoskit-worker2")])
def test_unschedulable_taints_and_labels_the_first_worker_or_the_named_node(
    tmp_path: Path, node: str, tainted: str
) -> None:
    _bin(tmp_path, "kubectl", 'shift; echo "$@" >> "$STATE"')  # past --kubeconfig: what it was asked
    params = Unschedulable().pinned(UnschedulableParams(reason="taint", node=node), KIND_NODES)
    plan = Unschedulable().plan(Node("chaoskit-control-plane", "control-plane"), params)
    line = next(a for a in plan.apply if "taint nodes" in a)
    done = _run(tmp_path, line)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "state").read_text().splitlines() == [  # tainted before the pods' label lets them near
        f"taint nodes {tainted} chaoskit.dev/unschedulable=scheduler.unschedulable:NoSchedule --overwrite",
        f"label nodes {tainted} chaoskit.dev/unschedulable=scheduler.unschedulable --overwrite",
    ]
    assert tainted in plan.summary  # the dry run names the node the run will taint


def test_unschedulable_pins_no_node_unless_it_taints_one() -> None:
    params = UnschedulableParams(reason="resources")
    assert Unschedulable().pinned(params, []) == params


def test_unschedulable_taint_effect_is_the_schedulers_untolerated_taint_reason() -> None:
    ns = "/api/v1/namespaces/chaoskit-faults"
    plan = Unschedulable().plan(Node("cp", "control-plane"), UnschedulableParams(reason="taint", replicas=1))
    pods = {f"{ns}/pods/a": _pod("a")}
    # v1.34's words, read on the real cluster: the taint itself is not named
    ours = (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match Pod's node "
        "affinity/selector. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is "
        "not helpful for scheduling."
    )
    assert Unschedulable().took_effect(_node_env({}, {**pods, f"{ns}/events/1": _event("a", ours)}), plan)
    # The apply lines without the taint line: the pods, tolerating every other taint, select a label no node has.
    unpinned = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    assert not Unschedulable().took_effect(_node_env({}, {**pods, f"{ns}/events/1": _event("a", unpinned)}), plan)


def test_unschedulable_has_recovered_once_a_new_pod_is_bound_on_the_node_and_nothing_of_it_is_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("chaoskit.faults.scheduler.PROBE_BIND_S", 0.1)
    plan = Unschedulable().plan(
        Node("cp", "control-plane"), Unschedulable().pinned(UnschedulableParams(reason="taint"), [Node("w", "worker")])
    )
    probe = "/api/v1/namespaces/default/pods/chaoskit-schedulable-probe"

    def node(taints: list[dict[str, str]], labels: dict[str, str]) -> dict[str, Any]:
        return {"metadata": {"name": "w", "labels": labels}, "spec": {"taints": taints}}

    ours = {"key": "chaoskit.dev/unschedulable", "effect": "NoSchedule"}
    label = {"chaoskit.dev/unschedulable": "scheduler.unschedulable"}
    ns = "/api/v1/namespaces/chaoskit-faults"  # not the fault's: it stays
    no_pods = {f"{ns}/pods": {"items": []}, ns: {"metadata": {"name": "chaoskit-faults"}}}
    for taints, labels, bound, healed in (
        ([ours], label, True, False),
        ([], label, True, False),
        ([], {}, True, True),
        ([], {}, False, False),
    ):
        pod = {"metadata": {"name": "chaoskit-schedulable-probe"}, "spec": {"nodeName": "w"} if bound else {}}
        env = _node_env({}, {"/api/v1/nodes/w": node(taints, labels), **no_pods, probe: pod})
        assert Unschedulable().recovered(env, plan) is healed
        assert env.kube.find(probe) is None, "asked, the probe goes, bound or not: nothing of it outlives the look"
    env = _node_env({}, {"/api/v1/nodes/w": node([], {}), **no_pods})
    applied: list[dict[str, Any]] = []
    apply = env.kube.apply
    env.kube.apply = lambda obj: applied.append(obj) or apply(obj)  # type: ignore[method-assign]
    assert not Unschedulable().recovered(env, plan), "a probe made now and not bound within its wait: a no observed"
    assert [o["spec"]["nodeSelector"] for o in applied] == [{"kubernetes.io/hostname": "w"}]


def test_disk_pressure_effect_needs_the_condition_and_the_taint() -> None:
    def node(pressure: str, tainted: bool) -> dict[str, Any]:
        taints = [{"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}] if tainted else []
        return {"spec": {"taints": taints}, "status": {"conditions": [{"type": "DiskPressure", "status": pressure}]}}

    plan = DiskPressure().plan(Node("w", "worker"), NoParams())
    assert DiskPressure().took_effect(_node_env({}, {"/api/v1/nodes/w": node("True", True)}), plan)
    assert not DiskPressure().took_effect(_node_env({}, {"/api/v1/nodes/w": node("True", False)}), plan)
    assert DiskPressure().recovered(_node_env({}, {"/api/v1/nodes/w": node("False", False)}), plan)
    assert not DiskPressure().recovered(_node_env({}, {"/api/v1/nodes/w": node("False", True)}), plan)


def test_unschedulable_makes_its_deployment_in_setup_and_the_fault_scales_it_up() -> None:
    plan = Unschedulable().plan(Node("cp", "control-plane"), UnschedulableParams(reason="resources", replicas=2))
    assert '"replicas":0' in plan.setup[-1] and "--replicas=2" in plan.apply[0] and len(plan.apply) == 1
    assert plan.no_op().setup == plan.setup and plan.no_op().apply == ()
