"""Cluster DNS broken two ways: CoreDNS gone (dns.down) and CoreDNS told to deny Service names (dns.misconfigured).

Both are checked as a pod sees them: a real DNS query for a Service name, sent from inside the control-plane node to
the kube-dns Service's ClusterIP (components/dns.py, the lookup the diagnoser makes too), never a read-back of what
chaoskit wrote.
"""

from __future__ import annotations

import shlex

from pydantic import BaseModel, Field

from chaoskit.components import dns
from chaoskit.env import Env
from chaoskit.errors import ToolError
from chaoskit.faults.base import Fault, FaultPlan, Named, NoOpControl, failing, kubectl, register
from chaoskit.model.base import DNS_LABEL, DNS_SUBDOMAIN
from chaoskit.model.params import FaultParams, params_of
from chaoskit.seams.nodeexec import Node

STATE = "/var/lib/chaoskit"
SAVED_REPLICAS = f"{STATE}/coredns.replicas"  # CoreDNS's replicas before the fault, for the revert
SAVED_COREFILE = f"{STATE}/coredns.Corefile"  # the Corefile before the fault, for the revert
KUBEADM_REPLICAS = 2  # what kubeadm installs CoreDNS with: the revert's count when none was kept
MARK = "# chaoskit dns.misconfigured"  # the first line of the block the fault adds, so a revert finds it
ROLLOUT_TIMEOUT = "120s"  # a CoreDNS pod starts and is ready in seconds; a loaded 2-core host takes longer


class DnsParams(FaultParams):
    namespace: str = Field(
        default=dns.NAMESPACE, max_length=63, pattern=DNS_LABEL, description="CoreDNS's namespace (kubeadm's)."
    )
    deployment: str = Field(
        default=dns.DEPLOYMENT, max_length=253, pattern=DNS_SUBDOMAIN, description="CoreDNS's Deployment."
    )


class CorefileParams(DnsParams):
    configmap: str = Field(
        default=dns.CONFIGMAP, max_length=253, pattern=DNS_SUBDOMAIN, description="The ConfigMap holding the Corefile."
    )
    domain: str = Field(
        default=dns.CLUSTER_DOMAIN,
        max_length=253,
        pattern=DNS_SUBDOMAIN,
        description="The zone answered NXDOMAIN: the cluster domain, where every Service name is.",
    )


def service_answers(env: Env, node: Node) -> tuple[dns.Lookup, str] | None:
    """The lookup of the API server's Service name from `node`, sent to the kube-dns Service's ClusterIP, and what is
    wrong with its answer ("" when it is the Service's ClusterIP); None when the API cannot say where to ask."""
    try:
        return dns.service_lookup(env.kube, env.nodes, node)
    except ToolError:
        return None


def answers_right(env: Env, node: Node) -> bool:
    got = service_answers(env, node)
    return got is not None and not got[1]


@register
class DnsDown(Fault):
    """CoreDNS scaled to zero: the kube-dns Service has no endpoint, and every pod's lookup goes unanswered.

    Every pod's resolv.conf names the kube-dns Service's ClusterIP; with no CoreDNS pod behind it kube-proxy rejects
    what is sent there (ICMP port unreachable) once the pods have gone (their 5 s lameduck keeps them answering: about
    7 s in all), so a lookup of any name, a Service's or the world's, fails at once or times out in the resolver.
    Workloads that resolve their peers by name stop reaching them, though every Service and pod is still there. No
    control-plane component is broken. Effect: a real lookup of kubernetes.default from the control-plane node, sent
    to the Service's ClusterIP, gets no answer. The revert scales the Deployment back to what it had (kept on the
    control-plane node) and fails while it still asks for none, or kubectl cannot say. Recovery: that lookup answers
    NOERROR with the kubernetes Service's ClusterIP. Runs kubectl on the control-plane node.
    """

    name = "dns.down"
    component = "dns"
    named = Named("dns", r"CoreDNS is scaled to zero")
    no_op = NoOpControl(wait=15.0)  # the real effect shows in about 7 s: the pods' lameduck, then kube-proxy
    scope = "cluster"  # every pod's lookups go through it
    Params = DnsParams
    effect_timeout = 60.0
    recovery_timeout = 120.0  # the pods start and pass CoreDNS's readiness, then kube-proxy programs them

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        p = params_of(params, DnsParams)
        deploy = ("-n", p.namespace, "deployment", p.deployment)
        replicas = kubectl("get", *deploy, "-o", "jsonpath={.spec.replicas}")
        return FaultPlan(
            self.name,
            node,
            apply=(
                f'mkdir -p {STATE} && {{ [ -s {SAVED_REPLICAS} ] || {{ n=$({replicas}) && [ -n "$n" ] && '
                f'echo "$n" > {SAVED_REPLICAS}; }}; }}',
                kubectl("scale", *deploy, "--replicas=0"),
            ),
            # only a Deployment asking for none is scaled: a no-op control, or a revert run twice, changes nothing;
            # the count kept goes once kubectl said the Deployment asks for some
            undo=(
                f'c=$({replicas}) && {{ [ "$c" != 0 ] || {{ n=$(cat {SAVED_REPLICAS} 2>/dev/null); '
                f'[ "${{n:-0}}" -gt 0 ] 2>/dev/null || n={KUBEADM_REPLICAS}; '
                f"{kubectl('scale', *deploy)} --replicas=$n; }}; }} && rm -f {SAVED_REPLICAS}",
            ),
            # kubectl failing leaves n empty, and the test fails: no answer is no proof
            verify=(
                failing(
                    f'n=$({replicas}) && [ "$n" -gt 0 ] 2>/dev/null',
                    f"{p.deployment} still asks for no replicas, or kubectl could not say",
                ),
            ),
            summary=f"scale {p.namespace}/{p.deployment} to 0: no DNS server behind kube-dns, every lookup fails",
            params=p,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        got = service_answers(env, plan.node)
        if got is not None and got[0].rcode not in (dns.TIMEOUT, dns.UNREACHABLE) and not got[0].answered:
            raise ToolError(f"the lookup could not be made: {got[0].detail}")  # no answer either way
        return got is not None and got[0].rcode in (
            dns.TIMEOUT,
            dns.UNREACHABLE,
        )  # timed out or refused: nobody answers

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return answers_right(env, plan.node)


def template_block(domain: str) -> tuple[str, ...]:
    """The Corefile lines the fault adds inside the `.:53` server block: every query in `domain` answered NXDOMAIN
    by the template plugin, which CoreDNS asks before `kubernetes`."""
    return (f"    {MARK}", f"    template IN ANY {domain} {{", "        rcode NXDOMAIN", "    }")


def patch_corefile(namespace: str, configmap: str, path: str) -> str:
    """A shell line that puts the file at `path` into the ConfigMap's Corefile: kubectl escapes it as JSON itself
    (a client-side dry run of the same ConfigMap), and a merge patch changes that key alone."""
    made = kubectl("-n", namespace, "create", "configmap", configmap, f"--from-file=Corefile={path}")
    patch = kubectl("-n", namespace, "patch", "configmap", configmap, "--type", "merge", "-p")
    return (
        f'l=$({made} --dry-run=client -o json | grep \'^ *"Corefile": \') && [ -n "$l" ] && '
        f'{patch} "{{\\"data\\": {{$l}}}}"'
    )


@register
class DnsMisconfigured(Fault):
    """A Corefile that answers NXDOMAIN for every Service name: CoreDNS runs, is Ready and answers, wrongly.

    A `template IN ANY cluster.local { rcode NXDOMAIN }` block is added inside the Corefile's `.:53` server block
    (the template plugin runs before `kubernetes` in CoreDNS's plugin order), as a stray edit or a half-finished
    migration would leave it. Every pod, endpoint and Service is fine and CoreDNS's pods are Ready; only the answers
    are wrong, so only a lookup shows it. CoreDNS's `reload` plugin would pick the change up within a couple of
    minutes (kubelet's ConfigMap sync, then its own check); the fault restarts CoreDNS's pods instead
    (`kubectl rollout restart`, as an operator applying a Corefile change does) and waits for the rollout, and the
    revert does the same with the original Corefile (kept on the control-plane node; without it, the block is cut
    out of the current one). The revert fails while the Corefile still holds the block, or kubectl cannot say.
    Effect: a real lookup of kubernetes.default from the control-plane node gets NXDOMAIN. Recovery: it answers
    NOERROR with the kubernetes Service's ClusterIP again. Runs kubectl on the control-plane node.
    """

    name = "dns.misconfigured"
    component = "dns"
    named = Named("dns", r"Corefile")
    # the apply lines include the rollout: the effect shows at its end, within a second or two of the new pods
    no_op = NoOpControl(wait=30.0)
    scope = "cluster"
    Params = CorefileParams
    effect_timeout = 60.0
    recovery_timeout = 180.0  # the revert's rollout, then the new pods' first answers

    def plan(self, node: Node, params: BaseModel) -> FaultPlan:
        p = params_of(params, CorefileParams)
        cm = ("-n", p.namespace, "configmap", p.configmap)
        current = kubectl("get", *cm, "-o", "jsonpath={.data.Corefile}")
        deploy = f"deployment/{p.deployment}"
        restart = f"{kubectl('-n', p.namespace, 'rollout', 'restart', deploy)}"
        wait = f"{kubectl('-n', p.namespace, 'rollout', 'status', deploy, f'--timeout={ROLLOUT_TIMEOUT}')}"
        broken, now = f"{STATE}/coredns.Corefile.broken", f"{STATE}/coredns.Corefile.now"
        insert = " ".join(f'print "{line}";' for line in template_block(p.domain))
        # after the `.:53 {` line; awk fails when the Corefile has no such block (nothing to add it to)
        add = f'{{ print }} $1 == ".:53" && $2 == "{{" && !done {{ {insert} done = 1 }} END {{ exit !done }}'
        lines = len(template_block(p.domain))
        cut = f'index($0, "{MARK}") {{ skip = {lines} }} skip > 0 {{ skip--; next }} {{ print }}'
        mark = shlex.quote(MARK)
        return FaultPlan(
            self.name,
            node,
            apply=(
                # the original, kept once: a second apply finds the block there and keeps the first copy
                f"mkdir -p {STATE} && {{ [ -s {SAVED_COREFILE} ] || {{ {current} > {SAVED_COREFILE}.tmp && "
                f"[ -s {SAVED_COREFILE}.tmp ] && ! grep -qF {shlex.quote(MARK)} {SAVED_COREFILE}.tmp && "
                f"mv {SAVED_COREFILE}.tmp {SAVED_COREFILE}; }}; }}",
                f"{current} | grep -qF {shlex.quote(MARK)} || {{ awk {shlex.quote(add)} {SAVED_COREFILE} > {broken} "
                f"&& {patch_corefile(p.namespace, p.configmap, broken)}; }}",
                f"{restart} && {wait}",
            ),
            # the original, or the current Corefile with the block cut out, put back only where kubectl read the block
            # in it; what was kept goes once the Corefile kubectl read holds no block, or was put back
            undo=(
                f'c=$({current}) && [ -n "$c" ] && {{ printf "%s" "$c" | grep -qF {mark}; m=$?; '
                f"if [ $m -eq 0 ]; then if [ -s {SAVED_COREFILE} ]; then cp {SAVED_COREFILE} {now}; "
                f"""else printf '%s\\n' "$c" | awk {shlex.quote(cut)} > {now}; fi && [ -s {now} ] && """
                f"{patch_corefile(p.namespace, p.configmap, now)} && {restart}; "
                f"elif [ $m -ne 1 ]; then false; fi; }} && rm -f {SAVED_COREFILE} {broken} {now}",
                wait,
            ),
            # kubectl failing leaves c empty, and the test fails: no answer is no proof
            verify=(
                failing(
                    f'c=$({current}) && [ -n "$c" ] && {{ printf "%s" "$c" | grep -qF {mark}; [ $? -eq 1 ]; }}',
                    "the Corefile still holds the NXDOMAIN block, or kubectl could not say",
                ),
            ),
            summary=f"a template in {p.namespace}/{p.configmap}'s Corefile answers NXDOMAIN for {p.domain}, CoreDNS "
            "restarted: every Service name fails to resolve",
            params=p,
        )

    def took_effect(self, env: Env, plan: FaultPlan) -> bool:
        got = service_answers(env, plan.node)
        return got is not None and got[0].rcode == "NXDOMAIN"

    def recovered(self, env: Env, plan: FaultPlan) -> bool:
        return answers_right(env, plan.node)
