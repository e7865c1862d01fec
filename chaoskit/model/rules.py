"""Rules that span fields: one implementation, run by the models on themselves and by the loader on raw YAML.

Each rule reads plain data (what YAML or `model_dump(by_alias=True)` gives) and skips whatever is malformed, since
the field validators already report that; so the loader can report these alongside every other problem.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from chaoskit.model.duration import DurationError, format_duration, parse_duration
from chaoskit.model.paths import Path, dotted
from chaoskit.model.promql import promql_problem
from chaoskit.registry import close_matches

Found = list[tuple[Path, str]]

HPA_MIN_REPLICAS, HPA_MAX_REPLICAS = 1, 6  # the workload HPA's defaults (the model's, and scaleUp's bounds)
DEFAULT_DEADLINE_MARGIN = 60.0  # seconds the dead-man switch waits past a step's duration when none is given
NAMESPACE_PREFIX = "chaoskit-"
MAX_NAMESPACE = 63  # a namespace name is a DNS-1123 label


def default_namespace(playbook_name: str) -> str:
    return NAMESPACE_PREFIX + playbook_name


def default_step_name(position: str, fault: str) -> str:
    """`position` is "1" for steps[0], "2.1" for steps[1].concurrent[0]."""
    return f"{position}-{fault}"


def _seconds(value: Any) -> float | None:
    try:
        return parse_duration(value)
    except DurationError:
        return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def mappings(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, Mapping):
                yield i, item


def step_problems(step: Mapping[str, Any], at: Path = ()) -> Found:
    duration, deadline = _seconds(step.get("duration")), _seconds(step.get("deadline"))
    if duration is not None and deadline is not None and deadline <= duration:
        return [
            (
                (*at, "deadline"),
                f"must exceed duration ({format_duration(duration)}): the node heals itself at the deadline",
            )
        ]
    return []


def threshold_problems(threshold: Mapping[str, Any], at: Path = ()) -> Found:
    if threshold.get("max") is None and threshold.get("min") is None:
        return [(at, "a threshold needs max, min or both")]
    low, high = _seconds(threshold.get("min")), _seconds(threshold.get("max"))
    if low is not None and high is not None and low > high:
        return [((*at, "min"), f"min ({threshold['min']}) exceeds max ({threshold['max']})")]
    return []


def hpa_problems(hpa: Mapping[str, Any], at: Path = ()) -> Found:
    low, high = _int(hpa.get("minReplicas")), _int(hpa.get("maxReplicas"))
    if low is not None and high is not None and low > high:
        return [((*at, "minReplicas"), f"minReplicas ({low}) exceeds maxReplicas ({high})")]
    return []


def fault_steps(spec: Mapping[str, Any], at: Path = ()) -> Iterator[tuple[Path, str, Mapping[str, Any]]]:
    """Every fault step, concurrent ones included: (its path, its position for default names, the step)."""
    for i, step in mappings(spec.get("steps")):
        if "concurrent" in step:
            for j, inner in mappings(step.get("concurrent")):
                yield (*at, "steps", i, "concurrent", j), f"{i + 1}.{j + 1}", inner
        else:
            yield (*at, "steps", i), f"{i + 1}", step


def step_name(step: Mapping[str, Any], position: str) -> str | None:
    """The name a step goes by: its own, or the default; None when neither can be known."""
    name, fault = step.get("name"), step.get("fault")
    if isinstance(name, str):
        return name
    if name is None and isinstance(fault, str):
        return default_step_name(position, fault)
    return None


def spec_problems(spec: Mapping[str, Any], at: Path = ()) -> Found:
    found: Found = []
    seen: dict[str, Path] = {}
    for path, position, step in fault_steps(spec, at):
        name = step_name(step, position)
        if name is None:
            continue
        if name in seen:
            where = (*path, "name") if "name" in step else path
            found.append((where, f"step name {name!r} is already used by {dotted(seen[name])}"))
        else:
            seen[name] = path
    found += scale_up_problems(spec, at)
    if spec.get("workload") is not None and spec.get("subject") is not None:
        found.append(((*at, "subject"), "give workload (chaoskit's) or subject (yours), not both"))
    measurements: dict[str, Path] = {}
    for i, measurement in mappings(spec.get("measurements")):
        name = measurement.get("name")
        if not isinstance(name, str):
            continue
        path = (*at, "measurements", i, "name")
        if name in measurements:
            found.append((path, f"measurement name {name!r} is already used by {dotted(measurements[name][:-1])}"))
        else:
            measurements[name] = path
    probes: dict[str, Path] = {}
    for i, probe in mappings(spec.get("probes")):
        name = probe.get("name")
        if isinstance(name, str) and name in probes:
            found.append(((*at, "probes", i, "name"), f"probe name {name!r} is already used by {dotted(probes[name])}"))
        elif isinstance(name, str):
            probes[name] = (*at, "probes", i)
    for i, threshold in mappings(spec.get("thresholds")):
        ref = threshold.get("measurement")
        if isinstance(ref, str) and ref not in measurements:
            found.append(((*at, "thresholds", i, "measurement"), _no_such_measurement(ref, list(measurements))))
    return found


def scale_up_problems(spec: Mapping[str, Any], at: Path = ()) -> Found:
    """A step's scaleUp raises the workload HPA's minReplicas: there must be one, and room above its minimum."""
    found: Found = []
    workload = spec.get("workload")
    hpa = workload.get("hpa") if isinstance(workload, Mapping) else None
    hpa = hpa if isinstance(hpa, Mapping) else {}
    low, high = _int(hpa.get("minReplicas", HPA_MIN_REPLICAS)), _int(hpa.get("maxReplicas", HPA_MAX_REPLICAS))
    for path, _, step in fault_steps(spec, at):
        scale_up = step.get("scaleUp")
        if not isinstance(scale_up, Mapping) or isinstance(spec.get("subject"), Mapping):
            continue  # a subject's HPA bounds are known only in the cluster: checked there, before anything runs
        if not isinstance(workload, Mapping):
            found.append(
                ((*path, "scaleUp"), "needs spec.workload or spec.subject: chaoskit raises an HPA's minReplicas")
            )
            continue
        wanted = _int(scale_up.get("minReplicas"))
        if wanted is not None and low is not None and high is not None and not low < wanted <= high:
            why = f"must be above the HPA's minReplicas ({low}) and at most its maxReplicas ({high})"
            found.append(((*path, "scaleUp", "minReplicas"), why))
    return found


def subject_problems(subject: Mapping[str, Any], at: Path = ()) -> Found:
    """A subject names exactly one workload: a Deployment, a StatefulSet or a selector."""
    given = [k for k in ("deployment", "statefulSet", "selector") if subject.get(k) is not None]
    if len(given) == 1:
        return []
    if not given:
        return [(at, "name your workload: deployment, statefulSet or selector")]
    return [((*at, given[1]), f"give one of deployment, statefulSet and selector, not {' and '.join(given)}")]


def probe_problems(probe: Mapping[str, Any], at: Path = ()) -> Found:
    """A probe is exactly one kind, with something to judge it by."""
    kinds = [k for k in ("http", "promql", "k8s", "command") if probe.get(k) is not None]
    if len(kinds) != 1:
        given = " and ".join(kinds) if kinds else "none"
        return [(at, f"give exactly one of http, promql, k8s and command (given: {given})")]
    kind, body = kinds[0], probe[kinds[0]]
    slo = probe.get("slo")
    if kind == "http" and not isinstance(slo, Mapping):
        return [(at, "an http probe needs an slo: successRate, p50, p99 or max")]
    if (
        kind == "http"
        and isinstance(slo, Mapping)
        and all(slo.get(k) is None for k in ("successRate", "p50", "p99", "max"))
    ):
        return [((*at, "slo"), "give successRate, p50, p99 or max")]
    if kind != "http" and slo is not None:
        return [((*at, "slo"), f"only an http probe has an slo; a {kind} probe is judged by its own bounds")]
    if not isinstance(body, Mapping):
        return []
    if kind == "http":
        return http_problems(body, (*at, kind))
    if kind == "promql" and body.get("min") is None and body.get("max") is None:
        return [((*at, kind), "a promql probe needs min, max or both")]
    query = body.get("query") if kind == "promql" else None
    if isinstance(query, str) and query and (why := promql_problem(query)):  # "" is the field's own error
        return [((*at, kind, "query"), why)]
    if kind == "k8s":
        if (body.get("condition") is None) == (body.get("field") is None):
            return [((*at, kind), "give condition or field (one of them)")]
        bounds = [b for b in ("equals", "min", "max") if body.get(b) is not None]
        if body.get("field") is not None and not bounds:
            return [((*at, kind, "field"), "a field needs equals, min or max")]
        if body.get("condition") is not None and bounds:
            return [((*at, kind, bounds[0]), "a condition is judged True or not: no equals, min or max")]
    return []


STATUS_CLASS = re.compile(r"^([1-5])xx$")  # 2xx
STATUS_RANGE = re.compile(r"^(\d{3})-(\d{3})$")  # 200-299
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP token (RFC 9110)
# what Python's re takes and the probe's Go regexp (RE2) does not: lookaround and backreferences
NOT_RE2 = re.compile(r"\(\?[=!]|\(\?<[=!]|\(\?P=|\\[1-9]")


def status_problem(spec: object) -> str:
    """Why `spec` is no status criterion: a code (200), a class (2xx) or a range (200-299); "" when it is one."""
    if isinstance(spec, bool) or not isinstance(spec, int | str):
        return f"{spec!r} is no status: give a code (200), a class (2xx) or a range (200-299)"
    if isinstance(spec, int):
        return "" if 100 <= spec <= 599 else f"{spec} is no HTTP status (100-599)"
    if STATUS_CLASS.match(spec):
        return ""
    m = STATUS_RANGE.match(spec)
    if m is None:
        return f"{spec!r} is no status: give a code (200), a class (2xx) or a range (200-299)"
    low, high = int(m[1]), int(m[2])
    if not (100 <= low <= high <= 599):
        return f"{spec!r}: a range runs from its lower code to its higher, within 100-599"
    return ""


def http_problems(body: Mapping[str, Any], at: Path) -> Found:
    """An http probe's request and criteria: what the probe pod would refuse, said at the field."""
    found: Found = []
    for i, spec in enumerate(body.get("status") or []):
        if why := status_problem(spec):
            found.append(((*at, "status", i), why))
    for name, value in (body.get("headers") or {}).items():
        if not HEADER_NAME.match(str(name)):
            found.append(((*at, "headers", name), f"{name!r} is no header name (letters, digits and !#$%&'*+.^_`|~-)"))
        elif "\n" in str(value) or "\r" in str(value):
            found.append(((*at, "headers", name), "a header value is one line"))
    if body.get("body") is not None and body.get("method", "GET") in ("GET", "HEAD"):
        found.append(
            ((*at, "body"), f"a {body.get('method', 'GET')} request carries no body: give method POST, PUT or PATCH")
        )
    pattern = body.get("bodyMatches")
    if isinstance(pattern, str):
        if NOT_RE2.search(pattern):
            found.append(((*at, "bodyMatches"), "the probe's regexp (Go's RE2) has no lookaround or backreferences"))
        else:
            try:
                re.compile(pattern)
            except re.error as exc:
                found.append(((*at, "bodyMatches"), f"not a regular expression: {exc}"))
    return found


def _no_such_measurement(ref: str, names: list[str]) -> str:
    matches = close_matches(ref, names)
    if matches:
        return f"no measurement named {ref!r}; did you mean " + " or ".join(repr(m) for m in matches) + "?"
    known = ", ".join(repr(n) for n in names) if names else "none"
    return f"no measurement named {ref!r} in spec.measurements (defined: {known})"


def namespace_problems(doc: Mapping[str, Any]) -> Found:
    metadata, spec = doc.get("metadata"), doc.get("spec")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    if not isinstance(spec, Mapping) or spec.get("namespace") or not isinstance(name, str):
        return []
    namespace = default_namespace(name)
    if len(namespace) > MAX_NAMESPACE:
        return [
            (
                ("metadata", "name"),
                f"too long for the default namespace {namespace!r} ({MAX_NAMESPACE} characters at most); "
                "shorten it or set spec.namespace",
            )
        ]
    return []


def document_problems(doc: Mapping[str, Any]) -> Found:
    """Every cross-field rule over a whole raw playbook document, paths from its root."""
    spec = doc.get("spec")
    if not isinstance(spec, Mapping):
        return []
    at: Path = ("spec",)
    found = namespace_problems(doc) + spec_problems(spec, at)
    for path, _, step in fault_steps(spec, at):
        found += step_problems(step, path)
    for i, threshold in mappings(spec.get("thresholds")):
        found += threshold_problems(threshold, (*at, "thresholds", i))
    workload = spec.get("workload")
    hpa = workload.get("hpa") if isinstance(workload, Mapping) else None
    if isinstance(hpa, Mapping):
        found += hpa_problems(hpa, (*at, "workload", "hpa"))
    if isinstance(subject := spec.get("subject"), Mapping):
        found += subject_problems(subject, (*at, "subject"))
    for i, probe in mappings(spec.get("probes")):
        found += probe_problems(probe, (*at, "probes", i))
    return found
