"""Every symptom owned: each one the look saw goes to the findings that explain it, or is reported on its own.

A diagnosis that names only what its diagnosers were taught says "ok" while pods wait, a Service has no endpoint or
DNS fails for a reason nobody knew. So the reports carry symptoms beside their findings, and this pass, pure and run
once per look, gives each symptom to every finding whose reach covers it (`affects`: a node, a component, an object,
or everything). A symptom nobody explains becomes a warning of its own: "unexplained symptom: …" with its evidence,
or, when its own words say why (a container's last error line), a finding of its entity's. A finding that stands on
what another finding affects is that one's consequence (`caused_by`), when the other is lower in the causal order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from chaoskit.components.table import CAUSAL_RANK, EVERYTHING, PER_NODE
from chaoskit.components.workloads import describe
from chaoskit.diagnosers.kit.base import ANYTHING, ComponentReport, Finding, Symptom, by_severity, status_of

UNEXPLAINED = "Unexplained symptom"  # the title's start of a symptom no finding owns


def reach(f: Finding, subject: str) -> frozenset[str]:
    """What a finding can explain: what it says it affects, else its component's own reach, and its entity."""
    own = set(f.affects)
    if not own:
        if f.component in EVERYTHING and f.severity == "critical":
            own.add(ANYTHING)
        elif f.component in PER_NODE:
            own.add(f"node/{subject}")
        own.add(f"component/{f.component}")
    if f.entity:
        own.add(f.entity)
    return frozenset(own)


def covers(reached: frozenset[str], entity: str, touches: Sequence[str]) -> bool:
    return ANYTHING in reached or entity in reached or any(t in reached for t in touches)


def own(reports: Sequence[ComponentReport]) -> tuple[ComponentReport, ...]:
    """The reports with every symptom owned: `explains` and `caused_by` filled, unowned symptoms turned into findings
    of the report that saw them, and each report's status judged again.

    Symptoms that say their own cause go first: one no component explains becomes its entity's finding, and then
    explains the symptoms that stand on that entity (a crash-looping Deployment, the Service with no endpoint)."""
    findings = [list(r.findings) for r in reports]
    verdicts = [
        (i, j, f, reach(f, r.subject))
        for i, r in enumerate(reports)
        for j, f in enumerate(r.findings)
        if f.judged and f.severity in ("critical", "warning")
    ]
    explains: dict[tuple[int, int], list[str]] = {}
    pending = [(i, s) for i, r in enumerate(reports) for s in r.symptoms]
    for own_cause in (True, False):
        for i, s in [(i, s) for i, s in pending if bool(s.cause) is own_cause]:
            owners = [(a, b) for a, b, _, reached in verdicts if covers(reached, s.entity, s.touches)]
            for key in owners:
                explains.setdefault(key, []).append(s.text)
            if not owners:
                f = unexplained(s, reports[i].component)
                findings[i].append(f)
                if own_cause:  # a cause now, for what stands on it
                    verdicts.append((i, len(findings[i]) - 1, f, reach(f, reports[i].subject)))
    causes = {(i, j): _cause(f, verdicts, reports) for i, j, f, _ in verdicts}
    out = []
    for i, r in enumerate(reports):
        mine = [
            replace(
                f,
                explains=tuple(dict.fromkeys((*f.explains, *explains.get((i, j), ())))),
                caused_by=causes.get((i, j)) or f.caused_by,  # or what its diagnoser knew
            )
            for j, f in enumerate(findings[i])
        ]
        if len(mine) != len(r.findings):
            mine = list(by_severity(mine))
        if mine != list(r.findings):
            r = replace(r, findings=tuple(mine), status=status_of(mine))
        out.append(r)
    return tuple(out)


def _cause(
    f: Finding, verdicts: Sequence[tuple[int, int, Finding, frozenset[str]]], reports: Sequence[ComponentReport]
) -> str:
    """The entity of the most basic other finding that reaches what `f` stands on, if any: its cause entity, or its
    process as component/node (kubelet/chaoskit-worker)."""
    rank = CAUSAL_RANK.get(f.component, 99)
    stands_on = (f.entity, *f.touches) if f.entity else f.touches
    candidates = [
        (i, g)
        for i, _, g, reached in verdicts
        if g is not f
        and (g.component != f.component or g.entity != f.entity)
        and CAUSAL_RANK.get(g.component, 99) < rank
        and (ANYTHING in reached or any(t in reached for t in stands_on if t))
    ]
    if not candidates:
        return ""
    i, root = min(candidates, key=lambda c: CAUSAL_RANK.get(c[1].component, 99))
    return root.entity or process(root, reports[i].subject)


def process(f: Finding, subject: str) -> str:
    """How a finding about a process itself names it: its component on its node."""
    return f"{f.component}/{subject}"


def unexplained(s: Symptom, component: str) -> Finding:
    """A symptom no finding owns: a finding of its entity's when its own words say why, else a plain warning."""
    evidence = (s.evidence,) if s.evidence else ()
    if s.cause:
        return Finding(
            "warning",
            component,
            s.text,
            s.cause,
            evidence,
            s.remediation,
            entity=s.entity,
            co_causes=s.co_causes,
            explains=(s.text,),
        )
    return Finding(
        "warning",
        component,
        f"{UNEXPLAINED}: {s.text}",
        "no component's finding explains it: chaoskit sees the symptom but not its cause",
        evidence,
        s.remediation or (describe(s.entity),),
        entity=s.entity,
        explains=(s.text,),
    )
