"""What a diagnosis is made of: evidence per check, findings, one report per component (and node), a diagnosis.

A diagnoser collects its component's evidence through the seams (I/O) and assesses it (pure): each assessed check
keeps the evidence it looked at and the findings it drew, so a report can list every check (JUnit: one testcase
each) and every finding can show what it rests on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeVar, cast

from pydantic import BaseModel

from chaoskit.components.table import CAUSAL_RANK
from chaoskit.diagnosers.kit.sources import Sources
from chaoskit.model.params import NoParams
from chaoskit.registry import Registered, Registry

UNCOLLECTED = "Evidence could not be collected"  # the title of a finding whose evidence did not come: no verdict

Severity = Literal["critical", "warning", "info"]
Status = Literal["ok", "degraded", "failed"]
Observed = str | int | float | bool | None

SEVERITY_ORDER: dict[Severity, int] = {"critical": 0, "warning": 1, "info": 2}
STATUS_ORDER: dict[Status, int] = {"failed": 0, "degraded": 1, "ok": 2}


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
    severity: Severity
    component: str
    title: str
    probable_cause: str
    evidence: tuple[Evidence, ...] = ()
    remediation: tuple[str, ...] = ()

    @property
    def checks(self) -> tuple[str, ...]:
        return tuple(e.check for e in self.evidence)

    def to_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "component": self.component,
            "title": self.title,
            "probable_cause": self.probable_cause,
            "evidence": [e.to_dict() for e in self.evidence],
            "remediation": list(self.remediation),
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
        )


def by_severity(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """Critical first; the order within one severity is the order the checks ran (stable sort)."""
    return tuple(sorted(findings, key=lambda f: SEVERITY_ORDER[f.severity]))


def status_of(findings: Iterable[Finding]) -> Status:
    severities = {f.severity for f in findings}
    if "critical" in severities:
        return "failed"
    return "degraded" if "warning" in severities else "ok"


@dataclass(frozen=True)
class ComponentReport:
    component: str
    subject: str  # the node the component runs on (control-plane components: the control-plane node)
    status: Status
    findings: tuple[Finding, ...]
    checks: tuple[Evidence, ...]  # every check made, failing or not

    @classmethod
    def of(cls, component: str, subject: str, assessed: Sequence[Assessed]) -> ComponentReport:
        findings = by_severity(f for a in assessed for f in a.findings)
        return cls(component, subject, status_of(findings), findings, tuple(a.evidence for a in assessed))

    def to_dict(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "subject": self.subject,
            "status": self.status,
            "findings": [f.to_dict() for f in self.findings],
            "checks": [e.to_dict() for e in self.checks],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComponentReport:
        return cls(
            component=data["component"],
            subject=data["subject"],
            status=data["status"],
            findings=tuple(Finding.from_dict(f) for f in data.get("findings") or ()),
            checks=tuple(Evidence.from_dict(e) for e in data.get("checks") or ()),
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
        return self.status == "ok"

    def top_findings(self) -> tuple[Finding, ...]:
        """Every critical and warning finding, the most likely root cause first: by severity, then by what the
        other components stand on (etcd under the API server, the runtime under the kubelet, ...)."""
        found = [f for r in self.reports for f in r.findings if f.severity in ("critical", "warning")]
        return tuple(sorted(found, key=lambda f: (SEVERITY_ORDER[f.severity], CAUSAL_RANK.get(f.component, 99))))

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "status": self.status,
            "collected_at": self.collected_at,
            "duration_s": round(self.duration_s, 3),
            "reports": [r.to_dict() for r in self.reports],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Diagnosis:
        return cls(
            cluster=data.get("cluster", ""),
            reports=tuple(ComponentReport.from_dict(r) for r in data.get("reports") or ()),
            collected_at=float(data.get("collected_at") or 0.0),
            duration_s=float(data.get("duration_s") or 0.0),
        )


@dataclass(frozen=True)
class Assessed:
    """One check, assessed: the evidence it looked at and the findings it drew (none when all is well)."""

    evidence: Evidence
    findings: tuple[Finding, ...] = ()


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
