"""What a diagnosis is made of: evidence per check, findings, one report per component (and node), a diagnosis.

A diagnoser collects its component's evidence through the seams (I/O) and assesses it (pure): each assessed check
keeps the evidence it looked at and the findings it drew, so a report can list every check (JUnit: one testcase
each) and every finding can show what it rests on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Generic, Literal, TypeVar, cast

from pydantic import BaseModel

from chaoskit.components.table import CAUSAL_RANK
from chaoskit.diagnosers.kit.sources import Sources
from chaoskit.model.moments import epoch, rfc3339
from chaoskit.model.params import NoParams
from chaoskit.registry import Registered, Registry

UNCOLLECTED = "Evidence could not be collected"  # the title of a finding whose evidence did not come: no verdict

Severity = Literal["critical", "warning", "info"]
# unknown: its evidence could not be collected, so no verdict (never a reason to fail a gate on its own)
Status = Literal["ok", "degraded", "failed", "unknown"]
Observed = str | int | float | bool | None

SEVERITY_ORDER: dict[Severity, int] = {"critical": 0, "warning": 1, "info": 2}
STATUS_ORDER: dict[Status, int] = {"failed": 0, "degraded": 1, "unknown": 2, "ok": 3}
ANYTHING = "*"  # what a finding affects when everything stands on it (the API server or etcd gone)


@dataclass(frozen=True)
class Evidence:
    """What one check collected, and from where: enough for a reader to redo the check by hand."""

    check: str  # e.g. "readyz", "node-lease"
    source: str  # the command or API path it came from
    observed: Mapping[str, Observed] = field(default_factory=dict)
    log_lines: tuple[str, ...] = ()
    events: tuple[str, ...] = ()
    metrics: Mapping[str, float] = field(default_factory=dict)
    conditions: tuple[str, ...] = ()
    available: bool = True  # False: the source did not answer (observed["error"] says why)

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "source": self.source,
            "observed": dict(self.observed),
            "log_lines": list(self.log_lines),
            "events": list(self.events),
            "metrics": dict(self.metrics),
            "conditions": list(self.conditions),
            "available": self.available,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evidence:
        return cls(
            check=data["check"],
            source=data["source"],
            observed=dict(data.get("observed") or {}),
            log_lines=tuple(data.get("log_lines") or ()),
            events=tuple(data.get("events") or ()),
            metrics={k: float(v) for k, v in (data.get("metrics") or {}).items()},
            conditions=tuple(data.get("conditions") or ()),
            available=bool(data.get("available", True)),
        )


@dataclass(frozen=True)
class Finding:
    """What is wrong, with the entity that causes it; `affects` says whose symptoms it can explain, and the diagnosis
    fills `explains` (the symptoms it owns) and `caused_by` (the root cause's entity, when this is a consequence)."""

    severity: Severity
    component: str
    title: str
    probable_cause: str
    evidence: tuple[Evidence, ...] = ()
    remediation: tuple[str, ...] = ()
    entity: str = ""  # the cause, as kind/namespace/name (node/worker, deployment/kube-system/coredns); "" its process
    co_causes: tuple[str, ...] = ()  # other entities that cause it with it (a cordoned node a workload is pinned to)
    affects: tuple[str, ...] = ()  # entities whose symptoms it explains ("*": all); () its component's own
    touches: tuple[str, ...] = ()  # entities it stands on: another finding that affects one of them causes this one
    explains: tuple[str, ...] = ()  # filled by the diagnosis: the symptoms this finding owns
    caused_by: str = ""  # filled by the diagnosis: the root cause this finding is a consequence of

    @property
    def checks(self) -> tuple[str, ...]:
        return tuple(e.check for e in self.evidence)

    @property
    def entities(self) -> tuple[str, ...]:
        """Every entity named as this finding's cause."""
        return tuple(e for e in (self.entity, *self.co_causes) if e)

    @property
    def judged(self) -> bool:
        """A verdict on something, not a look that could not be made."""
        return self.title != UNCOLLECTED

    def to_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "component": self.component,
            "title": self.title,
            "probable_cause": self.probable_cause,
            "entity": self.entity,
            **({"co_causes": list(self.co_causes)} if self.co_causes else {}),
            "caused_by": self.caused_by,
            "explains": list(self.explains),
            "evidence": [e.to_dict() for e in self.evidence],
            "remediation": list(self.remediation),
            **({"affects": list(self.affects)} if self.affects else {}),
            **({"touches": list(self.touches)} if self.touches else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        return cls(
            severity=data["severity"],
            component=data["component"],
            title=data["title"],
            probable_cause=data.get("probable_cause", ""),
            evidence=tuple(Evidence.from_dict(e) for e in data.get("evidence") or ()),
            remediation=tuple(data.get("remediation") or ()),
            entity=data.get("entity") or "",
            co_causes=tuple(data.get("co_causes") or ()),
            affects=tuple(data.get("affects") or ()),
            touches=tuple(data.get("touches") or ()),
            explains=tuple(data.get("explains") or ()),
            caused_by=data.get("caused_by") or "",
        )


@dataclass(frozen=True)
class Symptom:
    """Something the cluster shows that is wrong (a pod Pending, a Service with no endpoint, a lookup that fails),
    whoever caused it. The diagnosis gives each to the findings that explain it; one nobody explains is reported.

    `cause` is set where the symptom's own words say why (a container's last error line): unexplained, it is then
    reported as a finding of its entity's, not as a mystery."""

    kind: str  # pending, crash-loop, not-ready, short, no-endpoints, hpa, node-condition, dns
    entity: str  # kind/namespace/name of the object that shows it
    text: str  # one line, with the object's own words
    touches: tuple[str, ...] = ()  # what it stands on: its nodes, component/<name>, the objects it needs
    evidence: Evidence | None = None
    cause: str = ""  # the symptom's own words for why, when it has them
    co_causes: tuple[str, ...] = ()  # other entities its cause names (a cordoned node), beside its own
    remediation: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "entity": self.entity,
            "text": self.text,
            "touches": list(self.touches),
            "cause": self.cause,
            **({"co_causes": list(self.co_causes)} if self.co_causes else {}),
            **({"remediation": list(self.remediation)} if self.remediation else {}),
            **({"evidence": self.evidence.to_dict()} if self.evidence else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Symptom:
        return cls(
            kind=data["kind"],
            entity=data["entity"],
            text=data["text"],
            touches=tuple(data.get("touches") or ()),
            evidence=Evidence.from_dict(data["evidence"]) if data.get("evidence") else None,
            cause=data.get("cause") or "",
            co_causes=tuple(data.get("co_causes") or ()),
            remediation=tuple(data.get("remediation") or ()),
        )


def by_severity(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """Critical first; the order within one severity is the order the checks ran (stable sort)."""
    return tuple(sorted(findings, key=lambda f: SEVERITY_ORDER[f.severity]))


def status_of(findings: Iterable[Finding]) -> Status:
    """failed on a critical verdict, degraded on a warning one; unknown when only a look that could not be made
    stands (no verdict), ok otherwise."""
    found = list(findings)
    severities = {f.severity for f in found if f.judged}
    if "critical" in severities:
        return "failed"
    if "warning" in severities:
        return "degraded"
    return "unknown" if any(not f.judged and f.severity != "info" for f in found) else "ok"


@dataclass(frozen=True)
class ComponentReport:
    component: str
    subject: str  # the node the component runs on (control-plane components: the control-plane node)
    status: Status
    findings: tuple[Finding, ...]
    checks: tuple[Evidence, ...]  # every check made, failing or not
    symptoms: tuple[Symptom, ...] = ()  # what it saw wrong, for the diagnosis to give to the findings that explain it

    @classmethod
    def of(cls, component: str, subject: str, assessed: Sequence[Assessed]) -> ComponentReport:
        findings = by_severity(f for a in assessed for f in a.findings)
        symptoms = tuple(s for a in assessed for s in a.symptoms)
        return cls(component, subject, status_of(findings), findings, tuple(a.evidence for a in assessed), symptoms)

    def to_dict(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "subject": self.subject,
            "status": self.status,
            "findings": [f.to_dict() for f in self.findings],
            "checks": [e.to_dict() for e in self.checks],
            **({"symptoms": [s.to_dict() for s in self.symptoms]} if self.symptoms else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComponentReport:
        return cls(
            component=data["component"],
            subject=data["subject"],
            status=data["status"],
            findings=tuple(Finding.from_dict(f) for f in data.get("findings") or ()),
            checks=tuple(Evidence.from_dict(e) for e in data.get("checks") or ()),
            symptoms=tuple(Symptom.from_dict(s) for s in data.get("symptoms") or ()),
        )


@dataclass(frozen=True)
class Diagnosis:
    cluster: str
    reports: tuple[ComponentReport, ...]
    collected_at: float  # wall clock, seconds since the epoch, when collection began
    duration_s: float

    @property
    def status(self) -> Status:
        return min((r.status for r in self.reports), key=STATUS_ORDER.__getitem__, default="ok")

    @property
    def ok(self) -> bool:
        """Nothing is wrong and everything was judged."""
        return self.status == "ok"

    @property
    def breached(self) -> bool:
        """Something was judged wrong (a component degraded or failed); a look that could not be made is not."""
        return any(r.status in ("failed", "degraded") for r in self.reports)

    @property
    def judged_nothing(self) -> bool:
        return bool(self.reports) and all(r.status == "unknown" for r in self.reports)

    @property
    def exit_code(self) -> int:
        """1 when something was judged wrong; 4 when nothing could be judged; 0 otherwise (a component not judged
        beside healthy ones is said, not failed)."""
        return 1 if self.breached else 4 if self.judged_nothing else 0

    def top_findings(self) -> tuple[Finding, ...]:
        """Every critical and warning verdict, the root causes before their consequences, then by severity and by
        what the other components stand on (etcd under the API server, the runtime under the kubelet, ...)."""
        found = [f for r in self.reports for f in r.findings if f.severity in ("critical", "warning") and f.judged]
        return tuple(
            sorted(
                found,
                key=lambda f: (bool(f.caused_by), SEVERITY_ORDER[f.severity], CAUSAL_RANK.get(f.component, 99)),
            )
        )

    def root_causes(self) -> tuple[Finding, ...]:
        """The verdicts nothing else explains: what to fix first."""
        return tuple(f for f in self.top_findings() if not f.caused_by)

    def consequences(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.top_findings() if f.caused_by)

    def unjudged(self) -> tuple[ComponentReport, ...]:
        return tuple(r for r in self.reports if r.status == "unknown")

    def summary(self) -> str:
        """One sentence first: the root cause(s) and what to do, then what they affect, then what was not judged."""
        roots, after, unjudged = self.root_causes(), self.consequences(), self.unjudged()
        parts: list[str] = []
        if roots:
            first = roots[0]
            todo = f"; {first.remediation[0]}" if first.remediation else ""
            more = f" (+{len(roots) - 1} more root cause(s))" if len(roots) > 1 else ""
            who = ", ".join(first.entities) or first.component
            parts.append(f"root cause: {who}: {first.title}{todo}{more}")
        explained = sorted({s for f in roots for s in f.explains} - {f.title for f in roots})
        if after or explained:
            what = [f"{len(after)} other finding(s)"] if after else []
            what += [f"{len(explained)} symptom(s)"] if explained else []
            parts.append(f"it explains {' and '.join(what)}")
        if unjudged:
            names = ", ".join(f"{r.component}@{r.subject}" for r in unjudged[:4])
            parts.append(f"not judged: {names} (evidence could not be collected)")
        return (
            ". ".join(p[:1].upper() + p[1:] for p in parts) + "."
            if parts
            else "ok: every component healthy, no symptom stands."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "status": self.status,
            "summary": self.summary(),
            "collected_at": rfc3339(self.collected_at),
            "duration_s": round(self.duration_s, 3),
            "reports": [r.to_dict() for r in self.reports],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Diagnosis:
        return cls(
            cluster=data.get("cluster", ""),
            reports=tuple(ComponentReport.from_dict(r) for r in data.get("reports") or ()),
            collected_at=epoch(data.get("collected_at")) or 0.0,  # RFC 3339, or an older record's epoch seconds
            duration_s=float(data.get("duration_s") or 0.0),
        )


@dataclass(frozen=True)
class Assessed:
    """One check, assessed: the evidence it looked at and the findings it drew (none when all is well)."""

    evidence: Evidence
    findings: tuple[Finding, ...] = ()
    symptoms: tuple[Symptom, ...] = ()

    def because_of(self, cause: Finding, subject: str) -> Assessed:
        """This check with its findings marked as consequences of `cause`, another check of the same component on
        `subject` (a scheduler refused by RBAC never takes its lease; a stopped kubelet's node goes NotReady)."""
        named = cause.entity or f"{cause.component}/{subject}"  # its entity, else its process
        marked = tuple(f if f is cause else replace(f, caused_by=named) for f in self.findings)
        return replace(self, findings=marked)


E = TypeVar("E")
P = TypeVar("P", bound=BaseModel)


class Diagnoser(ABC, Generic[E, P]):
    """One component: `collect` does the I/O, `assess` (and so `analyze`) is pure and tested from recorded evidence."""

    component: ClassVar[str]
    per_node: ClassVar[bool] = False  # True: one report per node; False: the control-plane node only
    # per node: also a node no agent reaches (a managed control plane's), judged from what the API shows of it
    out_of_reach_too: ClassVar[bool] = False
    Params: ClassVar[type[BaseModel]] = NoParams  # thresholds, with defaults a healthy kind cluster stays within

    def __init__(self, params: BaseModel | None = None) -> None:
        self.params = params if params is not None else self.Params()

    @property
    def p(self) -> P:
        """The params as this diagnoser's own Params class (what the constructor was given, or its defaults)."""
        return cast(P, self.params)

    @abstractmethod
    def collect(self, src: Sources, node: str) -> E:
        """I/O: read everything the checks need about the component on `node`."""

    @abstractmethod
    def assess(self, evidence: E) -> list[Assessed]:
        """Pure: every check over the evidence, each with its findings."""

    def analyze(self, evidence: E) -> list[Finding]:
        return list(by_severity(f for a in self.assess(evidence) for f in a.findings))

    def report(self, evidence: E, subject: str) -> ComponentReport:
        return ComponentReport.of(self.component, subject, self.assess(evidence))


DIAGNOSERS: Registry[Registered] = Registry("diagnoser")
DiagnoserT = TypeVar("DiagnoserT", bound=type[Diagnoser[Any, Any]])


def register(cls: DiagnoserT) -> DiagnoserT:
    """Class decorator: adds a diagnoser to the catalog under its component's name."""
    DIAGNOSERS.add(cls.component, cls)
    return cls


def diagnoser_class(component: str) -> type[Diagnoser[Any, Any]]:
    cls: type[Diagnoser[Any, Any]] = DIAGNOSERS.get(component)  # type: ignore[assignment]
    return cls
