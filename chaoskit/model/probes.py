"""Probes: the user's steady state measured while a playbook runs, not asserted once.

A probe is one of four kinds (http, promql, k8s, command). It is sampled every `every` over the phases in `when`,
and each phase is judged on its own samples: an http probe against its SLO (success rate, latency percentiles), the
others sample by sample against their bound. Every sample goes into the run record.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from chaoskit.figures import seconds
from chaoskit.model import rules
from chaoskit.model.base import API_VERSION, DNS_LABEL, DNS_SUBDOMAIN, HTTP_URL, KIND, Model, raise_rule_problems
from chaoskit.model.duration import Duration, PositiveDuration

Phase = Literal["before", "during", "after", "effect"]
PHASES: tuple[Phase, ...] = ("before", "during", "after", "effect")
JUDGED_BY_DEFAULT: tuple[Phase, ...] = ("before", "during", "after")
KINDS = ("http", "promql", "k8s", "command")


Method = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


class HttpProbe(Model):
    """Requests from inside the cluster (a probe pod in chaoskit's namespace), e.g. through your Service. A request
    succeeds when it is answered and meets every criterion given: its status (by default any below 400), and its
    body containing or matching a text."""

    url: str = Field(max_length=2048, pattern=HTTP_URL, description="The URL, as a pod in the cluster reaches it.")
    method: Method = Field(default="GET", description="The request's method.")
    headers: dict[str, str] = Field(default_factory=dict, description="Request headers, e.g. {Authorization: ...}.")
    body: str | None = Field(default=None, max_length=65536, description="The request body (POST, PUT, PATCH).")
    status: list[int | str] | None = Field(
        default=None,
        min_length=1,
        description="The statuses that count as success: codes (200), classes (2xx) or ranges (200-299); default: "
        "any below 400.",
    )
    body_contains: str | None = Field(
        default=None, min_length=1, description="The response body must contain this text (its first MiB is read)."
    )
    body_matches: str | None = Field(
        default=None,
        min_length=1,
        description="The response body must match this regular expression (Go's RE2 syntax: no lookaround).",
    )
    timeout: PositiveDuration = Field(default=2.0, description="A request slower than this counts as failed.")
    node: str | None = Field(
        default=None,
        max_length=253,
        pattern=DNS_SUBDOMAIN,
        description='Ask from this node (a node name, "control-plane" or "worker"); default: wherever it is scheduled.',
    )


class Slo(Model):
    """What an http probe must keep in each judged phase."""

    success_rate: float | None = Field(
        default=None,
        ge=0,
        le=100,
        description="Percent of requests that met the probe's criteria (by default: answered below 400), at least.",
    )
    p50: Duration | None = Field(default=None, description="Median latency of the answered requests, at most.")
    p99: Duration | None = Field(default=None, description="99th percentile latency, at most.")
    max: Duration | None = Field(default=None, description="Slowest answered request, at most.")


class PromqlProbe(Model):
    """A PromQL query, its first result's value compared with a bound."""

    query: str = Field(min_length=1, description="An instant query, e.g. sum(rate(http_requests_total[1m])).")
    url: str | None = Field(
        default=None,
        max_length=2048,
        pattern=HTTP_URL,
        description="The Prometheus to ask; default: the one `chaoskit metrics prometheus up` runs.",
    )
    min: float | None = Field(default=None, description="Failed when the value is below this.")
    max: float | None = Field(default=None, description="Failed when the value is above this.")


class K8sProbe(Model):
    """A field or condition of one object, read through the API."""

    api_version: str = Field(pattern=API_VERSION, description="e.g. apps/v1.")
    kind: str = Field(
        pattern=KIND, description="e.g. Deployment (a kind the cluster serves: checked when the run starts)."
    )
    namespace: str | None = Field(
        default=None, max_length=63, pattern=DNS_LABEL, description="Its namespace (none: a cluster-wide kind)."
    )
    name: str = Field(min_length=1, max_length=253, description="Its name.")
    condition: str | None = Field(default=None, description="A status condition that must be True, e.g. Available.")
    field: str | None = Field(default=None, description="A dotted path, e.g. status.readyReplicas.")
    equals: str | int | float | bool | None = Field(default=None, description="The field must equal this.")
    min: float | None = Field(default=None, description="The field must be at least this.")
    max: float | None = Field(default=None, description="The field must be at most this.")


class CommandProbe(Model):
    """A command run where chaoskit runs; exit 0 is a success."""

    argv: list[str] = Field(min_length=1, description="The command and its arguments (no shell).")
    timeout: PositiveDuration = Field(default=10.0, description="A command slower than this has failed.")


class Probe(Model):
    """One probe: exactly one of http, promql, k8s and command."""

    name: str = Field(max_length=63, pattern=DNS_LABEL, description="Unique name, as the verdict and reports say it.")
    http: HttpProbe | None = Field(default=None, description="Requests from inside the cluster.")
    promql: PromqlProbe | None = Field(default=None, description="A Prometheus query against a bound.")
    k8s: K8sProbe | None = Field(default=None, alias="k8s", description="A field or condition of an object.")
    command: CommandProbe | None = Field(default=None, description="A command's exit code.")
    every: PositiveDuration = Field(default=1.0, description="Time between two samples.")
    when: list[Phase] = Field(
        default_factory=lambda: list(JUDGED_BY_DEFAULT),
        min_length=1,
        description="The phases judged: before (from the probe's start to the first fault), during (from a fault's "
        "effect until its component is healthy again after the revert), after (from the steady state after the "
        "last revert), effect (the first sample at or after each fault's effect; an http SLO judges its success "
        "and max there, not percentiles of one request).",
    )
    slo: Slo | None = Field(default=None, description="For http: what each judged phase must keep.")
    weight: float = Field(default=1.0, ge=0, le=100, description="Its weight in the resilience score.")

    @model_validator(mode="after")
    def _one_kind(self) -> Probe:
        raise_rule_problems(rules.probe_problems(self.model_dump(by_alias=True)))
        return self

    @property
    def kind(self) -> str:
        return next(k for k in KINDS if getattr(self, k) is not None)


def probe_words(probe: Probe) -> str:
    """One line for a plan or a summary: what is asked, how often, what must hold, when."""
    if probe.http is not None:
        h = probe.http
        criteria = [f"status {','.join(str(x) for x in h.status)}"] if h.status else []
        criteria += [f"body contains {h.body_contains!r}"] if h.body_contains else []
        criteria += [f"body matches {h.body_matches!r}"] if h.body_matches else []
        what = (
            f"{h.method} {h.url} (timeout {seconds(h.timeout)}"
            + "".join(f"; {c}" for c in criteria)
            + ")"
            + (f" from {h.node}" if h.node else "")
        )
    elif probe.promql is not None:
        what = f"PromQL {probe.promql.query}"
    elif probe.k8s is not None:
        k = probe.k8s
        what = f"{k.kind} {k.namespace + '/' if k.namespace else ''}{k.name} " + (
            f"condition {k.condition} True" if k.condition else f"{k.field}"
        )
    else:
        assert probe.command is not None
        what = "command " + " ".join(probe.command.argv)
    bounds = ""
    if probe.slo is not None:
        parts = [f"success >= {probe.slo.success_rate:g}%"] if probe.slo.success_rate is not None else []
        parts += [f"{k} <= {getattr(probe.slo, k) * 1000:g}ms" for k in ("p50", "p99", "max") if getattr(probe.slo, k)]
        bounds = "; " + ", ".join(parts)
    elif probe.promql is not None or (probe.k8s is not None and probe.k8s.field):
        src: PromqlProbe | K8sProbe | None = probe.promql or probe.k8s
        assert src is not None
        equals = src.equals if isinstance(src, K8sProbe) else None
        parts = [f"== {equals!r}"] if equals is not None else []
        parts += [f">= {src.min:g}"] if src.min is not None else []
        parts += [f"<= {src.max:g}"] if src.max is not None else []
        bounds = "; " + ", ".join(parts)
    return f"{probe.name}: {what} every {seconds(probe.every)}{bounds}; judged {', '.join(probe.when)}"
