"""Cluster DNS's lookup and judges: the query's bytes, what the node printed back (recorded on the kind cluster from
chaoskit-worker, and from a silent and a closed port for the two ways of no answer), the judge of an answer against
the Service's ClusterIP, and the Corefile's lines that keep Service names from the `kubernetes` plugin. The two DNS
faults' lines run in sh against a kubectl that reads and writes files: what they change, and a revert that verifies."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from chaoskit.components import dns
from chaoskit.faults import dns as faults
from chaoskit.seams.nodeexec import Node

# `sh -c "$(lookup_command(API_NAME))"` on chaoskit-worker, CoreDNS healthy: one A record, 10.96.0.1
NOERROR = (
    "@@dns server 10.96.0.10\n@@dns times 1796541113.956213 1796541113.968363\n@@dns rc 0\n@@dns err \n"
    "@@dns reply 70 1c 85 00 00 01 00 01 00 00 00 00 0a 6b 75 62 65 72 6e 65 74 65 73 07 64 65 66 61 75 6c 74 03 73 "
    "76 63 07 63 6c 75 73 74 65 72 05 6c 6f 63 61 6c 00 00 01 00 01 0a 6b 75 62 65 72 6e 65 74 65 73 07 64 65 66 61 "
    "75 6c 74 03 73 76 63 07 63 6c 75 73 74 65 72 05 6c 6f 63 61 6c 00 00 01 00 01 00 00 00 1e 00 04 0a 60 00 01\n"
)
# `lookup_command(DNS_NAME)` on chaoskit-worker2, CoreDNS healthy
NOERROR_DNS = (
    "@@dns server 10.96.0.10\n@@dns times 1796541198.440401 1796541198.444717\n@@dns rc 0\n@@dns err \n"
    "@@dns reply 92 af 85 00 00 01 00 01 00 00 00 00 08 6b 75 62 65 2d 64 6e 73 0b 6b 75 62 65 2d 73 79 73 74 65 6d "
    "03 73 76 63 07 63 6c 75 73 74 65 72 05 6c 6f 63 61 6c 00 00 01 00 01 08 6b 75 62 65 2d 64 6e 73 0b 6b 75 62 65 "
    "2d 73 79 73 74 65 6d 03 73 76 63 07 63 6c 75 73 74 65 72 05 6c 6f 63 61 6c 00 00 01 00 01 00 00 00 1e 00 04 0a "
    "60 00 0a\n"
)
# each lookup's recorded output, by name
RECORDED = {dns.API_NAME: NOERROR, dns.DNS_NAME: NOERROR_DNS}
# the same for nosuch.default.svc.cluster.local: NXDOMAIN with the zone's SOA in the authority section
NX_NAME = "nosuch.default.svc.cluster.local"
NXDOMAIN = (
    "@@dns server 10.96.0.10\n@@dns times 1796541114.081713 1796541114.094935\n@@dns rc 0\n@@dns err \n"
    "@@dns reply fb 91 85 03 00 01 00 00 00 01 00 00 06 6e 6f 73 75 63 68 07 64 65 66 61 75 6c 74 03 73 76 63 07 63 "
    "6c 75 73 74 65 72 05 6c 6f 63 61 6c 00 00 01 00 01 07 63 6c 75 73 74 65 72 05 6c 6f 63 61 6c 00 00 06 00 01 00 "
    "00 00 1e 00 44 02 6e 73 03 64 6e 73 07 63 6c 75 73 74 65 72 05 6c 6f 63 61 6c 00 0a 68 6f 73 74 6d 61 73 74 65 "
    "72 07 63 6c 75 73 74 65 72 05 6c 6f 63 61 6c 00 6b 15 0a b7 00 00 1c 20 00 00 07 08 00 01 51 80 00 00 00 1e\n"
)
# a server that reads the query and says nothing: timeout's exit code, no bytes
TIMED_OUT = (
    "@@dns server 127.0.0.9\n@@dns times 1796540736.342084 1796540738.344802\n@@dns rc 124\n@@dns err \n@@dns reply\n"
)
# CoreDNS scaled to zero: kube-proxy rejects what is sent to a Service with no endpoint
REFUSED = (
    "@@dns server 10.96.0.10\n@@dns times 1796540753.816208 1796540753.824056\n@@dns rc 1\n"
    "@@dns err dd: error reading 'standard input': Connection refused\n@@dns reply\n"
)

KUBEADM_COREFILE = """.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
"""


def with_lines(*lines: str, after: str = "    ready\n") -> str:
    return KUBEADM_COREFILE.replace(after, after + "".join(f"{line}\n" for line in lines))


def test_the_query_is_one_question_for_an_a_record_with_recursion_desired() -> None:
    q = dns.query("kubernetes.default.svc.cluster.local", 0x1234)
    assert q[:12] == bytes.fromhex("1234 0100 0001 0000 0000 0000")
    assert q[12:] == b"\x0akubernetes\x07default\x03svc\x07cluster\x05local\x00" + b"\x00\x01\x00\x01"
    assert dns.query_id(dns.API_NAME) == 0x701C  # the recorded replies' ID: the same lookup is the same command


def test_the_command_asks_the_given_server_or_kubelets_cluster_dns() -> None:
    assert 's="10.96.0.10"' in dns.lookup_command(dns.API_NAME, "10.96.0.10")
    assert "clusterDNS" in dns.lookup_command(dns.API_NAME) and "/dev/udp/" in dns.lookup_command(dns.API_NAME)


def test_a_noerror_reply_gives_its_a_record_and_latency() -> None:
    got = dns.parse_lookup(dns.API_NAME, NOERROR)
    assert got == dns.Lookup(dns.API_NAME, "10.96.0.10", "NOERROR", ("10.96.0.1",), 12.15)
    assert got.answered and got.describe() == "NOERROR 10.96.0.1 in 12.2 ms"
    assert dns.judge(got, "10.96.0.1") == ""
    assert dns.judge(got, "10.96.0.2") == "answered 10.96.0.1, not the Service's ClusterIP 10.96.0.2"


def test_an_nxdomain_reply_is_an_answer_that_fails() -> None:
    got = dns.parse_lookup(NX_NAME, NXDOMAIN)
    assert (got.rcode, got.answers, got.detail) == ("NXDOMAIN", (), "")
    assert got.answered and dns.judge(got, "10.96.0.1") == "NXDOMAIN"


def test_no_reply_is_a_timeout_and_a_rejected_query_is_unreachable() -> None:
    quiet = dns.parse_lookup(dns.API_NAME, TIMED_OUT)
    assert (quiet.rcode, quiet.ms, quiet.answered) == ("timeout", 2002.72, False)
    refused = dns.parse_lookup(dns.API_NAME, REFUSED)
    assert (refused.rcode, refused.answered) == ("unreachable", False)
    assert dns.judge(quiet, None) == "timeout" and dns.judge(refused, None) == "unreachable"


@pytest.mark.parametrize(
    ("output", "why"),
    [
        ("@@dns server \n@@dns error no server address\n", "no server address"),
        ("sh: 1: bash: not found\n", "sh: 1: bash: not found"),
    ],
)
def test_a_lookup_that_could_not_be_sent_is_an_error_with_its_words(output: str, why: str) -> None:
    got = dns.parse_lookup(dns.API_NAME, output)
    assert (got.rcode, got.detail, got.answered) == ("error", why, False)


def test_a_reply_to_another_question_or_cut_short_is_said_so() -> None:
    reply = bytes.fromhex(NOERROR.split("reply ")[1].replace(" ", ""))
    assert dns.parse_reply(reply, 0x0001)[0] == "error"
    rcode, answers, problem = dns.parse_reply(reply[:-2], dns.query_id(dns.API_NAME))
    assert (rcode, answers) == ("NOERROR", ()) and problem.startswith("reply cut short")


def test_kubeadms_corefile_lets_the_kubernetes_plugin_answer_service_names() -> None:
    assert dns.corefile_problems(KUBEADM_COREFILE) == []


def test_a_template_answering_nxdomain_for_the_cluster_domain_is_named_with_its_lines() -> None:
    text = with_lines("    template IN ANY cluster.local {", "        rcode NXDOMAIN", "    }")
    (p,) = dns.corefile_problems(text)
    assert p.lines == (7, 9)
    assert p.where() == "lines 7-9: template IN ANY cluster.local { / rcode NXDOMAIN / }"
    assert p.what.startswith("a `template` answers NXDOMAIN for kubernetes.default.svc.cluster.local")


def test_a_template_for_another_zone_or_type_or_one_that_falls_through_leaves_them_alone() -> None:
    for lines in (
        ("    template IN ANY example.org {", "        rcode NXDOMAIN", "    }"),
        ("    template IN AAAA cluster.local {", "        rcode NXDOMAIN", "    }"),
        ("    template IN A cluster.local {", "        match ^nothing[.]", "        fallthrough", "    }"),
    ):
        assert dns.corefile_problems(with_lines(*lines)) == [], lines


def test_hosts_without_fallthrough_a_rewrite_and_no_kubernetes_plugin_are_named() -> None:
    (hosts,) = dns.corefile_problems(with_lines("    hosts {", "        10.0.0.1 legacy.example", "    }"))
    assert "without `fallthrough`: SERVFAIL" in hosts.what and hosts.lines == (7, 9)
    (pinned,) = dns.corefile_problems(
        with_lines(
            "    hosts {", "        10.0.0.1 kubernetes.default.svc.cluster.local", "        fallthrough", "    }"
        )
    )
    assert pinned.what.startswith("a `hosts` entry answers kubernetes.default.svc.cluster.local")
    (moved,) = dns.corefile_problems(with_lines("    rewrite name suffix .cluster.local .example.org"))
    assert moved.what.startswith("a `rewrite` turns") and moved.lines == (7, 7)
    no_k8s = KUBEADM_COREFILE.replace("    kubernetes cluster.local in-addr.arpa ip6.arpa {", "    k8s_external x {")
    (missing,) = dns.corefile_problems(no_k8s)
    assert "no `kubernetes` plugin" in missing.what and missing.lines == (1, 1)


def test_the_most_specific_server_block_is_the_one_judged() -> None:
    text = (
        KUBEADM_COREFILE + "cluster.local:53 {\n    template IN ANY cluster.local {\n        rcode REFUSED\n    }\n}\n"
    )
    template, alone = dns.corefile_problems(text)  # that block, not `.:53`, gets every Service name
    assert "answers REFUSED" in template.what and template.lines == (25, 27)
    assert "no `kubernetes` plugin" in alone.what and alone.lines == (24, 24)
    assert dns.corefile_problems(text.replace("cluster.local:53", "cluster.local:1053")) == []


FAKE_KUBECTL = r"""
# kubectl as the fault's lines call it, over files in $KUBE: the Corefile, the replicas; "down" in $KUBE: no answer
import json, os, sys
kube = os.environ["KUBE"]
args = [a for a in sys.argv[1:] if not a.startswith("--kubeconfig=")]
if os.path.exists(f"{kube}/down"):
    sys.exit("The connection to the server was refused")
if "--dry-run=client" in args:  # a ConfigMap made from a file, as JSON: kubectl's own escaping
    path = next(a for a in args if a.startswith("--from-file=")).split("=", 2)[2]
    doc = {"kind": "ConfigMap", "metadata": {"name": "coredns"}, "data": {"Corefile": open(path).read()}}
    print(json.dumps(doc, indent=4))
elif "patch" in args:
    patch = json.loads(args[args.index("-p") + 1])
    open(f"{kube}/Corefile", "w").write(patch["data"]["Corefile"])
elif "get" in args and "configmap" in args:
    sys.stdout.write(open(f"{kube}/Corefile").read())
elif "get" in args:
    sys.stdout.write(open(f"{kube}/replicas").read())
elif "scale" in args:
    open(f"{kube}/replicas", "w").write(args[-1].split("=")[1])
open(f"{kube}/calls", "a").write(" ".join(args) + "\n")
"""


@pytest.fixture
def kube(tmp_path: Path) -> Path:
    """A folder standing for the cluster, and a kubectl on PATH that reads and writes it."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "kubectl").write_text(f"#!{sys.executable} -S{FAKE_KUBECTL}")  # -S: no site, a tenth of the start
    (bin_ / "kubectl").chmod(0o755)
    (tmp_path / "Corefile").write_text(KUBEADM_COREFILE)
    (tmp_path / "replicas").write_text("2")
    return tmp_path


def run_lines(kube: Path, lines: tuple[str, ...], state: Path) -> list[int]:
    """Each line in sh, as the node would run it, with the fault's state folder moved under `state`."""
    env = {**os.environ, "PATH": f"{kube / 'bin'}:{os.environ['PATH']}", "KUBE": str(kube)}
    return [
        subprocess.run(["sh", "-c", line.replace(faults.STATE, str(state))], env=env, capture_output=True).returncode
        for line in lines
    ]


def test_misconfigured_adds_the_block_once_and_its_revert_restores_the_corefile_and_verifies(kube: Path) -> None:
    plan = faults.DnsMisconfigured().plan(Node("cp", "control-plane"), faults.CorefileParams())
    state = kube / "state"
    assert run_lines(kube, plan.apply, state) == [0, 0, 0]
    broken = (kube / "Corefile").read_text()
    (p,) = dns.corefile_problems(broken)
    assert p.where() == "lines 3-5: template IN ANY cluster.local { / rcode NXDOMAIN / }"
    assert run_lines(kube, plan.apply, state) == [0, 0, 0] and (kube / "Corefile").read_text() == broken  # once
    assert "rollout restart deployment/coredns" in (kube / "calls").read_text()
    (kube / "down").touch()  # kubectl cannot answer: the revert's last line cannot verify, so it fails
    assert run_lines(kube, plan.revert[-1:], state) == [1]
    (kube / "down").unlink()
    assert run_lines(kube, plan.revert[-1:], state) == [1]  # the block still there
    assert run_lines(kube, plan.revert, state) == [0, 0, 0]
    assert (kube / "Corefile").read_text() == KUBEADM_COREFILE and not list(state.iterdir())
    # the original lost (a revert by hand on another node): the block is cut out of the Corefile itself
    assert run_lines(kube, plan.apply, state) == [0, 0, 0]
    (state / "coredns.Corefile").unlink()
    assert run_lines(kube, plan.revert, state) == [0, 0, 0] and (kube / "Corefile").read_text() == KUBEADM_COREFILE


def test_down_keeps_the_replicas_and_its_revert_puts_them_back_and_verifies(kube: Path) -> None:
    plan = faults.DnsDown().plan(Node("cp", "control-plane"), faults.DnsParams())
    state = kube / "state"
    (kube / "replicas").write_text("3")
    assert run_lines(kube, plan.apply, state) == [0, 0] and (kube / "replicas").read_text() == "0"
    assert run_lines(kube, plan.revert[-1:], state) == [1]  # still none asked for
    (kube / "down").touch()
    assert run_lines(kube, plan.revert, state) == [1, 1]  # kubectl cannot say: nothing is proven
    (kube / "down").unlink()
    assert run_lines(kube, plan.revert, state) == [0, 0] and (kube / "replicas").read_text() == "3"
    calls = (kube / "calls").read_text()
    assert run_lines(kube, plan.revert, state) == [0, 0] and (kube / "calls").read_text().count("scale") == 2
    assert calls.count("scale") == 2  # run again (the switch, a no-op control): nothing scaled
