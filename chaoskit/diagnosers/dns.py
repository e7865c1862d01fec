"""Cluster DNS: does a Service name resolve from every node, and if not, what in CoreDNS keeps it from resolving.

Every pod asks the kube-dns Service's ClusterIP (kubelet's clusterDNS) for Service names, so the look is the same
question asked from inside each node, side by side in the node scripts every diagnoser shares: a real DNS query for
two Service names, the answer checked against those Services' ClusterIPs. Each failed lookup is a symptom of the
kube-dns Service; what causes it is read from the API meanwhile: CoreDNS's Deployment and pods (scaled to zero, none
ready), its EndpointSlices, and the `coredns` ConfigMap's Corefile, whose lines are read for a plugin that answers
Service names before `kubernetes` can. A failure neither explains stays a symptom, for the diagnosis to give to
another finding (a node's kube-proxy) or to report as unexplained.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from chaoskit.components import dns
from chaoskit.components.dns import Lookup
from chaoskit.diagnosers.kit.base import Assessed, Diagnoser, Evidence, Finding, Symptom, register
from chaoskit.diagnosers.kit.common import (
    age,
    api_unavailable,
    condition_of,
    items,
    metrics_of,
    rounded,
    uncollected,
    unread,
)
from chaoskit.diagnosers.kit.sources import Fetched, Section, Sources
from chaoskit.figures import seconds
from chaoskit.model.params import FaultParams
from chaoskit.seams.scrape import Metrics

RESPONSES = "coredns_dns_responses_total"
# one CoreDNS's answers by rcode, asked through the Service from a node (whichever replica it balances to)
METRICS_COMMAND = (
    f's=$({dns.KUBELET_CLUSTER_DNS}); m=$(curl -sSf --max-time 2 "http://$s:{dns.METRICS_PORT}/metrics") || exit $?; '
    f"printf '%s\\n' \"$m\" | grep -E '^(# TYPE )?{RESPONSES}' || true"
)
AFFECTS = (dns.COMPONENT_ENTITY, dns.SERVICE_ENTITY)  # whose symptoms a CoreDNS finding explains
LOOK = (
    f"kubectl -n {dns.NAMESPACE} get deploy,pods,endpointslices -l k8s-app=kube-dns -o wide; "
    f"kubectl -n {dns.NAMESPACE} logs deploy/{dns.DEPLOYMENT}"
)


class DnsParams(FaultParams):
    not_ready_after: float = Field(
        default=60.0, description="Seconds a CoreDNS pod may stay not Ready (starting, a rollout) before it counts."
    )


@dataclass(frozen=True)
class DnsEvidence:
    node: str  # the control plane: the report's subject
    collected_at: float
    lookups: dict[str, tuple[Lookup, ...]]  # node → its lookups, in dns.LOOKUPS' order
    unread: dict[str, str]  # node → why its lookups never ran
    metrics: Metrics
    service: Fetched  # kube-dns
    api_service: Fetched  # default/kubernetes: the right answer to the first lookup
    deployment: Fetched
    pods: Fetched
    slices: Fetched
    configmap: Fetched


def lookup_commands() -> dict[str, str]:
    return {f"lookup:{name}": dns.lookup_command(name) for name, _ in dns.LOOKUPS}


@register
class DnsDiagnoser(Diagnoser[DnsEvidence, DnsParams]):
    """Cluster DNS: a Service name looked up from every node; CoreDNS's Deployment, pods, endpoints and Corefile."""

    component = "dns"
    Params = DnsParams

    def collect(self, src: Sources, node: str) -> DnsEvidence:
        reads: dict[str, Callable[[], Fetched]] = {  # read while the lookups run
            "service": src.api.soon(dns.SERVICE_PATH),
            "api_service": src.api.soon(dns.API_SERVICE_PATH),
            "deployment": src.api.soon(dns.DEPLOYMENT_PATH),
            "pods": src.api.soon(dns.PODS_PATH, labelSelector=dns.POD_SELECTOR),
            "slices": src.api.soon(dns.SLICES_PATH, labelSelector=dns.SLICE_SELECTOR),
            "configmap": src.api.soon(dns.CONFIGMAP_PATH),
        }
        reached = [n for n in src.nodes if n not in src.out_of_reach]
        scraper = node if node in reached else (reached[0] if reached else "")
        scripts = [
            (n, {**lookup_commands(), **({"metrics": METRICS_COMMAND} if n == scraper else {})}) for n in reached
        ]
        outs = dict(zip(reached, src.side_by_side(*scripts), strict=True))
        lookups, why = {}, {}
        for n, sections in outs.items():
            mine = [sections[f"lookup:{name}"] for name, _ in dns.LOOKUPS]
            if cut := next((unread(s) for s in mine if unread(s)), ""):  # cut off or never run: no lookup made
                why[n] = cut
                continue
            lookups[n] = tuple(dns.parse_lookup(name, s.output) for (name, _), s in zip(dns.LOOKUPS, mine, strict=True))
        scraped = outs[scraper]["metrics"] if scraper else Section("no node reached", None)
        got = {k: read() for k, read in reads.items()}
        return DnsEvidence(
            node=node,
            collected_at=src.clock(),
            lookups=lookups,
            unread=why,
            metrics=metrics_of(scraped),
            service=got["service"],
            api_service=got["api_service"],
            deployment=got["deployment"],
            pods=got["pods"],
            slices=got["slices"],
            configmap=got["configmap"],
        )

    def assess(self, ev: DnsEvidence) -> list[Assessed]:
        failed = failures(ev)
        return [self._lookups(ev, failed), self._coredns(ev, failed), self._corefile(ev, failed)]

    def _lookups(self, ev: DnsEvidence, failed: list[tuple[str, Lookup, str]]) -> Assessed:
        servers = {n: ls[0].server for n, ls in ev.lookups.items() if ls}
        e = Evidence(
            "lookups",
            f"a DNS query (A) from each node to its kubelet's clusterDNS, for {', '.join(n for n, _ in dns.LOOKUPS)}",
            {
                **{n: "; ".join(f"{x.name}: {x.describe()}" for x in ls) for n, ls in ev.lookups.items()},
                **{n: f"not run: {why}" for n, why in ev.unread.items()},
                "failed": len(failed),
            },
            metrics=rounded(
                (f"{RESPONSES}{{rcode={rc}}}", v) for rc, v in ev.metrics.group(RESPONSES, "rcode").items()
            ),
        )
        findings = [uncollected("dns", n, "cluster DNS lookups", why, e) for n, why in not_made(ev).items()]
        want = dns.cluster_ip(ev.service.data) if ev.service.ok else None
        for n, server in servers.items():
            if want and server and server != want:  # its pods ask an address that is not the DNS Service
                findings.append(
                    Finding(
                        "critical",
                        "dns",
                        f"kubelet on {n} gives its pods DNS server {server}, not kube-dns's ClusterIP {want}",
                        f"kubelet's clusterDNS ({dns.KUBELET_CONFIG}) does not point at the cluster DNS Service: every "
                        f"pod on {n} asks {server} for names",
                        (e,),
                        (f"set clusterDNS: [{want}] in {dns.KUBELET_CONFIG} on {n} and restart kubelet",),
                        entity=f"node/{n}",
                        affects=(f"node/{n}",),
                    )
                )
        symptoms = tuple(
            Symptom(
                "dns",
                dns.SERVICE_ENTITY,
                f"lookup of {x.name} from {n}: {problem}",
                (dns.COMPONENT_ENTITY, f"node/{n}"),
                Evidence("lookup", f"a DNS query from {n} to {x.server or '?'}:53", {"answer": x.describe()}),
            )
            for n, x, problem in failed
        )
        return Assessed(e, tuple(findings), symptoms)

    def _coredns(self, ev: DnsEvidence, failed: list[tuple[str, Lookup, str]]) -> Assessed:
        d = ev.deployment.data if ev.deployment.ok and isinstance(ev.deployment.data, dict) else {}
        wanted = d.get("spec", {}).get("replicas")
        ready = d.get("status", {}).get("readyReplicas") or 0
        pods = items(ev.pods)
        endpoints = ready_endpoints(ev.slices)
        e = Evidence(
            "coredns",
            f"GET {dns.DEPLOYMENT_PATH}, its pods ({dns.POD_SELECTOR}), the {dns.SERVICE} EndpointSlices",
            {
                "deployment": f"{ready}/{wanted} ready" if d else ev.deployment.error[:200],
                "pods": "; ".join(pod_state(p) for p in pods) or (None if ev.pods.ok else ev.pods.error[:200]),
                "ready_endpoints": endpoints if ev.slices.ok else None,
                "service": dns.cluster_ip(ev.service.data) if ev.service.ok else ev.service.error[:200],
            },
        )
        if not ev.deployment.ok and not missing(ev.deployment):
            return unanswered(ev, e, failed, "CoreDNS's Deployment", ev.deployment.error)
        fails = outcome(failed, ev)
        if missing(ev.service) and failed:
            return Assessed(e, (self._finding(ev, e, dns.SERVICE_ENTITY, f"the {dns.SERVICE} Service is gone", fails),))
        if not d:
            if not failed:  # the cluster's DNS is served by something else, and it answers
                return Assessed(e)
            cause = f"there is no Deployment {dns.NAMESPACE}/{dns.DEPLOYMENT}"
            return Assessed(e, (self._finding(ev, e, dns.DEPLOYMENT_ENTITY, cause, fails),))
        if wanted == 0:
            cause = f"CoreDNS is scaled to zero (deployment {dns.NAMESPACE}/{dns.DEPLOYMENT} asks for 0 replicas)"
            return Assessed(e, (self._finding(ev, e, dns.DEPLOYMENT_ENTITY, cause, fails),))
        if ready == 0:
            states = "; ".join(pod_state(p) for p in pods if not pod_ready(p)) or "no pod"
            cause = f"no CoreDNS pod is ready (0/{wanted}: {states})"
            return Assessed(e, (self._finding(ev, e, dns.DEPLOYMENT_ENTITY, cause, fails),))
        late = [
            p for p in pods if not pod_ready(p) and (not_ready_for(p, ev.collected_at) or 0) > self.p.not_ready_after
        ]
        if late:
            finding = Finding(
                "warning",
                "dns",
                f"{len(late)} of {len(pods)} CoreDNS pods not ready for over {seconds(self.p.not_ready_after)}: "
                f"{pod_state(late[0])}",
                "cluster DNS answers from fewer replicas than it asks for",
                (e,),
                (LOOK,),
                entity=dns.DEPLOYMENT_ENTITY,
                affects=AFFECTS,
            )
            return Assessed(e, (finding,))
        return Assessed(e)

    def _finding(self, ev: DnsEvidence, e: Evidence, entity: str, cause: str, fails: str) -> Finding:
        consequence = f"; {fails}" if fails else ""
        return Finding(
            "critical",
            "dns",
            f"Cluster DNS is down: {cause}{consequence}",
            "no DNS server stands behind the kube-dns Service: every pod's lookup of a Service name (and of any "
            "name, through CoreDNS's forward) is refused or times out",
            (e,),
            (
                f"kubectl -n {dns.NAMESPACE} scale deploy {dns.DEPLOYMENT} --replicas=2 (kubeadm's count), or what "
                "it had",
                LOOK,
            ),
            entity=entity,
            affects=AFFECTS,
        )

    def _corefile(self, ev: DnsEvidence, failed: list[tuple[str, Lookup, str]]) -> Assessed:
        data = ev.configmap.data if ev.configmap.ok and isinstance(ev.configmap.data, dict) else {}
        corefile = str((data.get("data") or {}).get(dns.COREFILE_KEY) or "")
        problems = dns.corefile_problems(corefile) if corefile else []
        e = Evidence(
            "corefile",
            f"GET {dns.CONFIGMAP_PATH}: its {dns.COREFILE_KEY}, read for what answers Service names",
            {
                "corefile_lines": len(corefile.splitlines()) if corefile else None,
                "problems": len(problems),
                **({"error": ev.configmap.error[:200]} if not ev.configmap.ok else {}),
            },
            log_lines=tuple(f"{p.where()}: {p.what}" for p in problems),
        )
        if not ev.configmap.ok and not missing(ev.configmap):
            return unanswered(ev, e, failed, "the Corefile", ev.configmap.error)
        if not problems:
            return Assessed(e)
        first = problems[0]
        wrong = [(n, x, p) for n, x, p in failed if x.answered]  # answered, but not the Service's address
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        fixes = (
            f"kubectl -n {dns.NAMESPACE} edit configmap {dns.CONFIGMAP}: remove or narrow {first.where()}",
            f"kubectl -n {dns.NAMESPACE} rollout restart deploy/{dns.DEPLOYMENT}: CoreDNS's reload plugin takes up "
            "to a couple of minutes otherwise",
        )
        cause = "; ".join(p.what for p in problems)
        if wrong:
            said = sorted({p for _, _, p in wrong})
            finding = Finding(
                "critical",
                "dns",
                f"Cluster DNS answers {', '.join(said)} for Service names: the Corefile's {first.where()}{more}",
                f"the {dns.CONFIGMAP} ConfigMap's Corefile: {cause}; {outcome(failed, ev)}",
                (e,),
                fixes,
                entity=dns.CONFIGMAP_ENTITY,
                affects=AFFECTS,
            )
        else:
            finding = Finding(
                "warning",
                "dns",
                f"The Corefile's {first.where()}{more} would keep Service names from the kubernetes plugin",
                f"the {dns.CONFIGMAP} ConfigMap's Corefile: {cause}; the lookups still answer (CoreDNS has not "
                "reloaded it yet, or none could be made)",
                (e,),
                fixes,
                entity=dns.CONFIGMAP_ENTITY,
                affects=AFFECTS,
            )
        return Assessed(e, (finding,))


def unanswered(ev: DnsEvidence, e: Evidence, failed: list[tuple[str, Lookup, str]], what: str, error: str) -> Assessed:
    """An API read that did not come back: said plainly while every lookup answered right (DNS works, judged from the
    nodes); no verdict while some fail (why they fail is what could not be read)."""
    if ev.lookups and not failed and not not_made(ev):
        return api_unavailable("dns", e.check, e.source, error[:200])
    return Assessed(e, (uncollected("dns", ev.node, what, error[:200], e),))


def not_made(ev: DnsEvidence) -> dict[str, str]:
    """Nodes whose lookups could not be made, and why: the script never ran, or it could not send the query (no
    clusterDNS in kubelet's config, no bash): a fact about chaoskit's look, not about DNS."""
    sent = {n: x.detail for n, ls in ev.lookups.items() for x in ls if x.rcode == "error" and n not in ev.unread}
    return {**ev.unread, **sent}


def failures(ev: DnsEvidence) -> list[tuple[str, Lookup, str]]:
    """Every lookup made that did not get its Service's ClusterIP back: (node, lookup, what was wrong)."""
    expected = {
        name: dns.cluster_ip(got.data) if got.ok else None
        for (name, _), got in zip(dns.LOOKUPS, (ev.api_service, ev.service), strict=True)
    }
    return [
        (n, x, problem)
        for n, ls in ev.lookups.items()
        for x in ls
        if x.rcode != "error" and (problem := dns.judge(x, expected.get(x.name)))
    ]


def outcome(failed: list[tuple[str, Lookup, str]], ev: DnsEvidence) -> str:
    """The lookups' failures in a few words: how many, and what they got."""
    if not failed:
        return ""
    asked = sum(len(ls) for ls in ev.lookups.values())
    got = sorted({x.rcode if not x.answered or x.rcode != "NOERROR" else "wrong address" for _, x, _ in failed})
    return f"{len(failed)} of {asked} lookups failed ({', '.join(got)})"


def missing(fetched: Fetched) -> bool:
    """The API answered that the object is not there (not: it did not answer)."""
    return not fetched.ok and ("404" in fetched.error or "not found" in fetched.error.lower())


def pod_ready(pod: dict[str, Any]) -> bool:
    return condition_of(pod, "Ready").get("status") == "True"


def not_ready_for(pod: dict[str, Any], now: float) -> float | None:
    ready = condition_of(pod, "Ready")
    return age(ready.get("lastTransitionTime") or pod.get("metadata", {}).get("creationTimestamp"), now)


def pod_state(pod: dict[str, Any]) -> str:
    """A pod in a few words: its name, phase, node and, when not ready, why (its container's waiting reason)."""
    meta, status = pod.get("metadata", {}), pod.get("status", {})
    name, where = meta.get("name", "?"), pod.get("spec", {}).get("nodeName") or "unscheduled"
    if pod_ready(pod):
        return f"{name} Ready on {where}"
    why = [
        (c.get("state", {}).get("waiting") or {}).get("reason")
        or ("running, not ready" if c.get("ready") is False else "")
        for c in status.get("containerStatuses") or []
    ]
    said = ", ".join(w for w in why if w) or condition_of(pod, "Ready").get("reason") or status.get("phase", "?")
    return f"{name} not ready on {where} ({said})"


def ready_endpoints(slices: Fetched) -> int:
    return sum(
        1 for s in items(slices) for e in s.get("endpoints") or [] if (e.get("conditions") or {}).get("ready") is True
    )
