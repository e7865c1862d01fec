"""Pieces several diagnosers share: HTTP answers read inside a node, certificate expiry findings, times and ages,
log excerpts, metric values for evidence, and the finding that says API-side evidence is unavailable."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from chaoskit.diagnosers.kit.base import UNCOLLECTED, Assessed, Evidence, Finding
from chaoskit.diagnosers.kit.sources import CURL_TIMED_OUT, Fetched, Section
from chaoskit.model.timeline import api_time
from chaoskit.seams.certs import DAY, expiry
from chaoskit.seams.scrape import Metrics
from chaoskit.seams.shell import Asks

_HTTP_MARK = "@@http "


def http_command(url: str, *, max_time: float = 3, insecure: bool = True, extra: str = "") -> Asks:
    """curl printing the body, then the status code on a line of its own (000: nothing answered)."""
    k = "-k " if insecure else ""
    line = f"curl -sS {k}{extra}--max-time {max_time:g} -w '\\n{_HTTP_MARK}%{{http_code}}\\n' {shlex.quote(url)}"
    return Asks(line, url=url, http=True)


@dataclass(frozen=True)
class HttpAnswer:
    code: int  # 0: no HTTP answer at all
    body: str
    curl_rc: int | None  # 28: timed out; 7: refused; 35/60: TLS

    @classmethod
    def of(cls, section: Section) -> HttpAnswer:
        body, code = [], 0
        for line in section.output.splitlines():
            if line.startswith(_HTTP_MARK):
                digits = line[len(_HTTP_MARK) :].strip()
                code = int(digits) if digits.isdigit() else 0
            else:
                body.append(line)
        return cls(code, "\n".join(body).strip(), section.rc)

    @property
    def answered(self) -> bool:
        return self.code != 0

    @property
    def timed_out(self) -> bool:
        return self.curl_rc == CURL_TIMED_OUT

    @property
    def unread(self) -> str:
        """Why curl never finished (its node script cut off by a loaded node, or not run); "" when it did."""
        return unread(Section(self.body, self.curl_rc))

    def describe(self) -> str:
        if self.answered:
            return f"HTTP {self.code}"
        if self.timed_out:
            return "no answer (timed out)"
        last = self.body.splitlines()[-1] if self.body else ""
        return f"no answer (curl exit {self.curl_rc}{': ' + last if last else ''})"


def unread(section: Section) -> str:
    """Why a node-script command never finished (cut off or not run), from its last words; "" when it did."""
    return (section.text.splitlines() or ["not run"])[-1] if section.rc is None else ""


def uncollected(component: str, node: str, what: str, why: str, ev: Evidence) -> Finding:
    """A look that did not finish is no verdict: a warning that says so, never "down" or "does not answer"."""
    return Finding(
        "warning",
        component,
        UNCOLLECTED,
        f"chaoskit could not look at {what} on {node} ({why}); no verdict on it",
        (ev,),
        (f"chaoskit diagnose {component}: a second look, alone",),
    )


def failing_checks(verbose_body: str) -> list[str]:
    """The `[-]name failed` lines of a /readyz?verbose or /healthz?verbose answer, as names."""
    return [m.group(1) for m in re.finditer(r"^\[-\](\S+)", verbose_body, re.M)]


def age(value: object, now: float) -> float | None:
    t = api_time(value)
    return None if t is None else max(0.0, now - t)


def iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def expiry_findings(
    component: str,
    subject: str,
    not_after: float | None,
    now: float,
    warning_days: float,
    evidence: Evidence,
    effect: str,
    fix: tuple[str, ...],
) -> tuple[Finding, ...]:
    """Critical for an expired certificate, a warning for one expiring within `warning_days`, else nothing.

    `subject` names the certificate ("The API server's serving certificate"); `effect` is what its expiry breaks.
    """
    state = expiry(not_after, now, warning_days)
    if state == "expired":
        return (
            Finding(
                "critical",
                component,
                f"{subject} expired at {iso(not_after)}",
                f"x509: certificate has expired; {effect}",
                (evidence,),
                fix,
            ),
        )
    if state == "expiring" and not_after is not None:
        return (
            Finding(
                "warning",
                component,
                f"{subject} expires in {(not_after - now) / DAY:.1f} days ({iso(not_after)})",
                f"when it expires: {effect}",
                (evidence,),
                fix,
            ),
        )
    return ()


# klog's error and warning lines (E1130 03:48:56.170719 ...), and words that mark trouble in any log format
_KLOG_PROBLEM = re.compile(r"^(?:\S+ \S+ \S+\[\d+\]: )?[EF]\d{4} ")
TROUBLE = ("panic", "fatal", "x509", "expired", "deadline exceeded", "timed out", "timeout", "refused", "PLEG")


def excerpt(text: str, patterns: Iterable[str] = (), limit: int = 12) -> tuple[str, ...]:
    """The last `limit` lines that are klog errors or contain one of `patterns` (case-insensitive)."""
    wanted = [p.lower() for p in patterns]
    picked = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and (_KLOG_PROBLEM.match(line) or any(p in line.lower() for p in wanted))
    ]
    return tuple(line[:400] for line in picked[-limit:])


def matching(lines: Iterable[str], *needles: str) -> tuple[str, ...]:
    lowered = [n.lower() for n in needles]
    return tuple(line for line in lines if any(n in line.lower() for n in lowered))


def unavailable(check: str, source: str, error: str) -> Evidence:
    return Evidence(check, source, {"error": error}, available=False)


def api_unavailable(component: str, check: str, source: str, error: str) -> Assessed:
    """API-side evidence could not be read: said plainly, never counted against the component itself."""
    ev = unavailable(check, source, error)
    finding = Finding(
        "info",
        component,
        f"API-side evidence unavailable ({check})",
        f"the API server did not answer: {error}; this check was skipped, not failed",
        (ev,),
        ("diagnose the API server first (chaoskit diagnose apiserver)",),
    )
    return Assessed(ev, (finding,))


@lru_cache(maxsize=16)  # a scrape two diagnosers share (one batch) is parsed once; Metrics are only read
def metrics_of(section: Section) -> Metrics:
    """A scrape section as metrics; a failed scrape keeps curl's last words as the reason."""
    return Metrics.parse(section.output) if section.ok else Metrics.unavailable(section.text[-300:] or "no answer")


def items(fetched: Fetched) -> list[dict[str, Any]]:
    """The items of a fetched list (none when the read failed)."""
    data = fetched.data if fetched.ok else None
    return list(data.get("items") or []) if isinstance(data, dict) else []


def rounded(values: Iterable[tuple[str, float | None]], digits: int = 4) -> dict[str, float]:
    """Metric values for an Evidence record: absent ones left out, the rest rounded for reading."""
    return {k: round(v, digits) for k, v in values if v is not None}


def condition_of(obj: Any, kind: str) -> dict[str, Any]:
    """An object's status condition of type `kind` (a Node's Ready, a Deployment's Available, an HPA's ScalingActive);
    {} when it has none or the object is not there."""
    if not isinstance(obj, dict):
        return {}
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return {}
