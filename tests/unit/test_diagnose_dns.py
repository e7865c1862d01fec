"""Cluster DNS's diagnosis over recorded evidence: a healthy cluster says nothing; CoreDNS scaled to zero or with no
pod ready is named by its Deployment, a Corefile that answers Service names before `kubernetes` by its ConfigMap and
lines; every failed lookup is a symptom the diagnosis owns (or reports as unexplained); a look that could not be made
is no verdict. The collection itself runs through the seams' fakes."""

from __future__ import annotations

import re
from typing import Any

from test_dns import KUBEADM_COREFILE, RECORDED, with_lines

from chaoskit.components import dns
from chaoskit.components.dns import Lookup
from chaoskit.diagnosers.dns import DnsDiagnoser, DnsEvidence
from chaoskit.diagnosers.kit.base import UNCOLLECTED, ComponentReport, Finding, status_of
from chaoskit.diagnosers.kit.common import items
from chaoskit.diagnosers.kit.owning import UNEXPLAINED, own
from chaoskit.diagnosers.kit.sources import Fetched, Sources
from chaoskit.env import Env
from chaoskit.faults.dns import DnsDown, DnsMisconfigured
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.nodeexec import FakeNodeExec
from chaoskit.seams.scrape import Metrics
from chaoskit.seams.shell import Completed, FakeRunner

CP, W1, W2 = "chaoskit-control-plane", "chaoskit-worker", "chaoskit-worker2"
NODES = (CP, W1, W2)
NOW = 1_796_541_200.0
LONG_AGO = "2026-12-06T07:06:12Z"  # minutes before NOW
DNS_IP, API_IP = "10.96.0.10", "10.96.0.1"
API_DOWN = Fetched(error="API server unreachable: GET /readyz: [Errno 111] Connection refused")
HEALTHY: tuple[Lookup, ...] = (
    Lookup(dns.API_NAME, DNS_IP, "NOERROR", (API_IP,), 1.2),
    Lookup(dns.DNS_NAME, DNS_IP, "NOERROR", (DNS_IP,), 0.9),
)
TEMPLATE = ("    template IN ANY cluster.local {", "        rcode NXDOMAIN", "    }")


def pod(name: str, ready: bool = True, waiting: str = "") -> dict[str, Any]:
    state = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
    return {
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {"nodeName": CP},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": str(ready), "lastTransitionTime": LONG_AGO}],
            "containerStatuses": [{"name": "coredns", "ready": ready, "state": state}],
        },
    }


def answered(rcode: str = "NOERROR", server: str = DNS_IP) -> tuple[Lookup, ...]:
    return (
        Lookup(dns.API_NAME, server, rcode, (API_IP,) if rcode == "NOERROR" else (), 1.2),
        Lookup(dns.DNS_NAME, server, rcode, (DNS_IP,) if rcode == "NOERROR" else (), 0.9),
    )


def evidence(
    *,
    replicas: int = 2,
    pods: tuple[dict[str, Any], ...] = (pod("coredns-a"), pod("coredns-b")),
    corefile: str = KUBEADM_COREFILE,
    lookups: tuple[Lookup, ...] | dict[str, tuple[Lookup, ...]] = HEALTHY,
    unread: dict[str, str] | None = None,
    api: bool = True,
) -> DnsEvidence:
    ready = sum(1 for p in pods if p["status"]["conditions"][0]["status"] == "True")
    per_node = lookups if isinstance(lookups, dict) else {n: lookups for n in NODES if n not in (unread or {})}
    slice_ = {"endpoints": [{"conditions": {"ready": True}} for _ in range(ready)]}

    def read(data: Any) -> Fetched:
        return Fetched(data) if api else API_DOWN

    return DnsEvidence(
        node=CP,
        collected_at=NOW,
        lookups=per_node,
        unread=dict(unread or {}),
        metrics=Metrics.parse('coredns_dns_responses_total{rcode="NOERROR",server="dns://:53",zone="."} 8\n'),
        service=read({"spec": {"clusterIP": DNS_IP}}),
        api_service=read({"spec": {"clusterIP": API_IP}}),
        deployment=read({"spec": {"replicas": replicas}, "status": {"readyReplicas": ready}}),
        pods=read({"items": list(pods)}),
        slices=read({"items": [slice_]}),
        configmap=read({"data": {"Corefile": corefile}}),
    )


def report(ev: DnsEvidence) -> ComponentReport:
    return DnsDiagnoser().report(ev, CP)


def verdicts(ev: DnsEvidence) -> list[Finding]:
    return [f for f in DnsDiagnoser().analyze(ev) if f.judged]


def names(f: Finding, fault: type[DnsDown] | type[DnsMisconfigured]) -> bool:
    return (
        f.component == fault.named.component
        and re.search(fault.named.cause, f"{f.title} {f.probable_cause}") is not None
    )


def test_a_healthy_cluster_has_no_finding_and_no_symptom() -> None:
    r = report(evidence())
    assert (r.status, r.findings, r.symptoms) == ("ok", (), ())
    lookups = r.checks[0]
    assert lookups.observed[W1] == (
        "kubernetes.default.svc.cluster.local: NOERROR 10.96.0.1 in 1.2 ms; "
        "kube-dns.kube-system.svc.cluster.local: NOERROR 10.96.0.10 in 0.9 ms"
    )
    assert lookups.metrics == {"coredns_dns_responses_total{rcode=NOERROR}": 8.0}


def test_coredns_scaled_to_zero_is_named_by_its_deployment_and_owns_every_failed_lookup() -> None:
    r = report(evidence(replicas=0, pods=(), lookups=answered("unreachable")))
    (f,) = r.findings
    assert f.severity == "critical" and f.entity == "deployment/kube-system/coredns"
    assert f.affects == ("component/dns", "service/kube-system/kube-dns") and names(f, DnsDown)
    assert f.title == (
        "Cluster DNS is down: CoreDNS is scaled to zero (deployment kube-system/coredns asks for 0 replicas); "
        "6 of 6 lookups failed (unreachable)"
    )
    assert len(r.symptoms) == 6
    s = r.symptoms[0]
    assert (s.kind, s.entity, s.text) == (
        "dns",
        "service/kube-system/kube-dns",
        f"lookup of {dns.API_NAME} from {CP}: unreachable",
    )
    assert s.touches == ("component/dns", f"node/{CP}")
    (owned,) = own([r])
    assert owned.findings[0].explains == tuple(x.text for x in r.symptoms) and owned.status == "failed"


def test_no_coredns_pod_ready_is_named_with_what_each_waits_on() -> None:
    stuck = (pod("coredns-a", False, "CrashLoopBackOff"), pod("coredns-b", False, "CrashLoopBackOff"))
    (f,) = verdicts(evidence(pods=stuck, lookups=answered("timeout")))
    assert f.entity == "deployment/kube-system/coredns"
    assert f.title.startswith(
        f"Cluster DNS is down: no CoreDNS pod is ready (0/2: coredns-a not ready on {CP} (CrashLoopBackOff); "
    )
    assert f.title.endswith("6 of 6 lookups failed (timeout)")


def test_one_pod_not_ready_for_long_is_a_warning_while_the_other_answers() -> None:
    (f,) = verdicts(evidence(pods=(pod("coredns-a"), pod("coredns-b", False, "CrashLoopBackOff"))))
    assert f.severity == "warning" and f.title.startswith("1 of 2 CoreDNS pods not ready for over 60s: coredns-b")


def test_a_corefile_template_answering_nxdomain_is_named_by_its_configmap_and_lines() -> None:
    r = report(evidence(corefile=with_lines(*TEMPLATE), lookups=answered("NXDOMAIN")))
    (f,) = r.findings
    assert f.severity == "critical" and f.entity == "configmap/kube-system/coredns" and names(f, DnsMisconfigured)
    assert f.title == (
        "Cluster DNS answers NXDOMAIN for Service names: "
        "the Corefile's lines 7-9: template IN ANY cluster.local { / rcode NXDOMAIN / }"
    )
    assert "a `template` answers NXDOMAIN for kubernetes.default.svc.cluster.local" in f.probable_cause
    assert len(r.symptoms) == 6 and own([r])[0].findings[0].explains
    # the same Corefile while the lookups still answer (not reloaded yet): the ConfigMap, as a warning
    (pending,) = verdicts(evidence(corefile=with_lines(*TEMPLATE)))
    assert pending.severity == "warning" and pending.entity == "configmap/kube-system/coredns"
    assert pending.title.startswith("The Corefile's lines 7-9: template IN ANY cluster.local")


def test_an_answer_that_is_not_the_services_clusterip_is_a_failed_lookup() -> None:
    wrong = (Lookup(dns.API_NAME, DNS_IP, "NOERROR", ("10.0.0.1",), 1.0), answered()[1])
    r = report(
        evidence(
            corefile=with_lines(
                "    hosts {", "        10.0.0.1 kubernetes.default.svc.cluster.local", "        fallthrough", "    }"
            ),
            lookups=wrong,
        )
    )
    assert {s.text for s in r.symptoms} == {
        f"lookup of {dns.API_NAME} from {n}: answered 10.0.0.1, not the Service's ClusterIP {API_IP}" for n in NODES
    }
    (f,) = r.findings
    assert f.entity == "configmap/kube-system/coredns" and f.severity == "critical"


def test_a_failure_no_finding_explains_is_left_to_the_diagnosis_which_reports_it_or_gives_it_to_its_node() -> None:
    r = report(evidence(lookups={CP: answered(), W1: answered("timeout"), W2: answered()}))
    assert r.findings == () and r.status == "ok"
    assert [s.text for s in r.symptoms] == [f"lookup of {n} from {W1}: timeout" for n, _ in dns.LOOKUPS]
    (alone,) = own([r])
    assert alone.status == "degraded"
    assert [f.title for f in alone.findings] == [
        f"{UNEXPLAINED}: lookup of {n} from {W1}: timeout" for n, _ in dns.LOOKUPS
    ]
    kubelet = ComponentReport(
        "kubelet", W1, "failed", (Finding("critical", "kubelet", "kubelet on W1 stopped", "x"),), ()
    )
    dns_owned, kubelet_owned = own([r, kubelet])
    assert dns_owned.findings == () and len(kubelet_owned.findings[0].explains) == 2


def test_a_kubelet_pointing_its_pods_elsewhere_is_named_on_its_node() -> None:
    (f,) = verdicts(evidence(lookups={CP: answered(), W1: answered(server="10.96.0.99"), W2: answered()}))
    assert f.title == f"kubelet on {W1} gives its pods DNS server 10.96.0.99, not kube-dns's ClusterIP {DNS_IP}"
    assert f.entity == f"node/{W1}"


def test_lookups_not_run_and_the_api_unanswered_are_never_a_verdict() -> None:
    r = report(evidence(unread={W2: "chaoskit: cut off after 6.5s"}))
    (f,) = r.findings
    assert f.title == UNCOLLECTED and "cluster DNS lookups on chaoskit-worker2" in f.probable_cause
    assert r.status == "unknown" and r.symptoms == ()
    cannot = Lookup(dns.API_NAME, "", "error", detail="no server address")
    (f,) = report(evidence(lookups={CP: answered(), W1: (cannot, cannot), W2: answered()})).findings
    assert f.title == UNCOLLECTED and f"on {W1} (no server address)" in f.probable_cause
    # the API down, CoreDNS gone: the lookups' failures stay symptoms, with no verdict on why
    gone = report(evidence(api=False, lookups=answered("unreachable")))
    assert {f.title for f in gone.findings} == {UNCOLLECTED} and len(gone.findings) == 2
    assert gone.status == "unknown" and status_of(gone.findings) == "unknown" and len(gone.symptoms) == 6
    # the API down, every lookup right: DNS works, judged from the nodes; what could not be read is said plainly
    down = report(evidence(api=False))
    assert down.status == "ok" and {f.severity for f in down.findings} == {"info"}
    assert down.findings[0].title == "API-side evidence unavailable (coredns)"


def respond(argv: tuple[str, ...]) -> Completed:
    """A node's batch script answered as each node did on the healthy cluster: each section's own recorded output."""
    script = argv[-1]
    out = []
    for name in re.findall(r"^echo '@@chaoskit-section (\S+)' >", script, re.M):
        asked = name.split("/", 1)[-1]  # a batch prefixes each asker's names
        said = RECORDED.get(asked.removeprefix("lookup:"), "")
        out.append(f"@@chaoskit-section {name}\n{said}\n@@chaoskit-rc {0 if said else 22}")
    return Completed(argv, 0, "\n".join(out) + "\n")


def test_collect_reads_the_api_beside_the_lookups_from_every_node() -> None:
    kube = FakeKube(
        {
            dns.SERVICE_PATH: {"spec": {"clusterIP": DNS_IP}},
            dns.API_SERVICE_PATH: {"spec": {"clusterIP": API_IP}},
            dns.DEPLOYMENT_PATH: {"spec": {"replicas": 2}, "status": {"readyReplicas": 2}},
            f"{dns.PODS_PATH}/coredns-a": {
                **pod("coredns-a"),
                "metadata": {"name": "coredns-a", "labels": {"k8s-app": "kube-dns"}},
            },
            dns.CONFIGMAP_PATH: {"data": {"Corefile": KUBEADM_COREFILE}},
        }
    )
    runner = FakeRunner(responder=respond)
    src = Sources.of(Env(kube, FakeNodeExec(runner), "chaoskit"), CP, NODES).batched()
    ev = DnsDiagnoser().collect(src, CP)
    assert sorted(ev.lookups) == sorted(NODES) and ev.unread == {}
    assert {x.describe() for ls in ev.lookups.values() for x in ls} == {
        "NOERROR 10.96.0.1 in 12.2 ms",
        "NOERROR 10.96.0.10 in 4.3 ms",
    }
    assert sorted(c[0] for c in runner.calls) == sorted(NODES)  # one round-trip per node
    assert ev.slices.ok and items(ev.slices) == [] and ev.pods.ok  # no EndpointSlice: an empty list, as the API says
    r = report(ev)
    assert r.findings == () and r.symptoms == ()
