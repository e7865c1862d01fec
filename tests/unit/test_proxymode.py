from __future__ import annotations

import subprocess

import pytest

from chaoskit.components import kube_proxy as kp
from chaoskit.components.kube_proxy import (
    CONFIGMAP,
    ProxyModeUnsupported,
    configured_mode,
    ipvs_unsupported,
    set_mode,
    with_mode,
)
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.seams.shell import FakeRunner

CONF = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\niptables:\n  minSyncPeriod: 1s\nmode: iptables\nnftables: {}\n"
NODES = ("chaoskit-control-plane", "chaoskit-worker")


def _kube(conf: str = CONF) -> FakeKube:
    objects = {CONFIGMAP: {"metadata": {"name": "kube-proxy"}, "data": {"config.conf": conf}}}
    for n in NODES:
        objects[f"/api/v1/nodes/{n}"] = {"metadata": {"name": n}}
    return FakeKube(objects)


def test_the_top_level_mode_is_read_and_rewritten_without_touching_the_mode_sections() -> None:
    assert configured_mode(_kube()) == "iptables"
    assert configured_mode(_kube(CONF.replace("mode: iptables", 'mode: ""'))) == "iptables"
    switched = with_mode(CONF, "nftables")
    assert "mode: nftables\n" in switched and "iptables:\n  minSyncPeriod: 1s" in switched
    assert with_mode("kind: KubeProxyConfiguration\n", "nftables").endswith("mode: nftables\n")


def test_ipvs_is_refused_with_the_kernels_reason_and_nothing_is_changed() -> None:
    nodes = FakeNodeExec(
        FakeRunner(failures={("chaoskit-worker", "sh"): ""}, responses={("chaoskit-worker", "uname"): "6.18.0\n"})
    )
    reason = ipvs_unsupported(nodes, Node("chaoskit-worker", "worker"))
    assert reason is not None and "ip_vs" in reason and "6.18.0" in reason
    kube = _kube()
    with pytest.raises(ProxyModeUnsupported, match="ip_vs"):
        set_mode(kube, nodes, "ipvs")
    assert not any(method == "PATCH" for method, _ in kube.calls)


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ProxyModeUnsupported, match="userspace"):
        set_mode(_kube(), FakeNodeExec(), "userspace")


def test_a_mode_already_running_everywhere_is_left_alone() -> None:
    nodes = FakeNodeExec(FakeRunner(responses={(n, "curl"): "iptables" for n in NODES}))
    kube = _kube()
    assert set_mode(kube, nodes, "iptables") is False
    assert not any(method in ("PATCH", "DELETE") for method, _ in kube.calls)


def test_the_probe_reads_one_service_s_own_chain_named_as_kube_proxy_names_it() -> None:
    # read off a v1.34 kube-proxy's rules on a kind node, for Service chaoskit-background-t1/bg-00579 port http
    assert kp.iptables_service_chain("chaoskit-background-t1", "bg-00579", "http") == "KUBE-SVC-23PFPIKJ4QWVZ42J"
    assert kp.iptables_service_chain("ns", "web", "") != kp.iptables_service_chain("ns", "web", "http")
    assert kp.nft_service_chain("ns", "web", "http").endswith("-ns/web/tcp/http")
    line = kp.endpoint_ips_command("ns", "web", "http")
    assert "iptables-save" not in line and "nft list table" not in line, "never a whole table: it grows with Services"


def test_the_iptables_read_follows_each_jump_to_its_endpoint_chain_s_dnat() -> None:
    """Past 1,000 endpoints kube-proxy writes no comments: the read must not need them."""
    svc = kp.iptables_service_chain("ns", "web", "http")
    chains = {
        svc: "-N X\n-A X ! -s 10.244.0.0/16 -d 10.96.0.9/32 -p tcp -m tcp --dport 80 -j KUBE-MARK-MASQ\n"
        "-A X -m statistic --mode random --probability 0.50000000000 -j KUBE-SEP-AAAA\n-A X -j KUBE-SEP-BBBB\n",
        "KUBE-SEP-AAAA": "-A KUBE-SEP-AAAA -s 10.244.1.3/32 -j KUBE-MARK-MASQ\n"
        "-A KUBE-SEP-AAAA -p tcp -m tcp -j DNAT --to-destination 10.244.1.3:8080\n",
        "KUBE-SEP-BBBB": "-A KUBE-SEP-BBBB -p tcp -m tcp -j DNAT --to-destination 10.244.2.4:8080\n",
    }
    # stand-ins for the node's commands: nftables mode is off, iptables lists the chain it is asked for
    cases = " ".join(f"{name}) printf '%s' '{text}';;" for name, text in chains.items())
    fakes = f'nft() {{ return 1; }}; iptables() {{ case "$4" in {cases} *) return 1;; esac; }}; '
    script = fakes + kp.endpoint_ips_command("ns", "web", "http")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["10.244.1.3", "10.244.2.4"]
