"""kube-proxy's rule-sync delay against the number of Services, per mode: one row per (mode, size) from a rule-sync
measurement taken with that many background Services, as a plain table and as an HTML page drawing the curves.

Every figure is one the measurement took: ours pooled over every node (rules_programmed, traffic_follows), kube-proxy's
own from its metrics, the probe's and chaoskit's cost from the processes themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from statistics import mean
from typing import Any

from markupsafe import Markup

from chaoskit.model.timeline import MeasurementResult, summarize
from chaoskit.reports.common import TEMPLATES
from chaoskit.reports.curve import curve_svg

STAGES = ("rules_programmed", "traffic_follows")
STATISTICS = ("p50", "p90", "max")


def _avg(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return mean(present) if present else None


def _top(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def row(
    mode: str,
    services: int,
    result: MeasurementResult,
    grown: Mapping[str, Any] | None,
    chaoskit_cost: Mapping[str, float],
) -> dict[str, Any]:
    """One (mode, size): our stages pooled over every node, kube-proxy's own work averaged over its nodes."""
    out: dict[str, Any] = {"mode": mode, "services": services, "changes": len(result.extra.get("changes", []))}
    for stage in STAGES:
        sm = summarize(s for s in result.samples if s.stage == stage)
        out[stage] = {"count": sm.count, "p50": sm.p50, "p90": sm.p90, "max": sm.max, "precision": sm.precision_median}
    programmed = (grown or {}).get("programmed_s") or {}
    out["background"] = {
        "accepted_s": (grown or {}).get("accepted_s"),
        "programmed_s": _top(list(programmed.values())),
        "unprogrammed": sorted(n for n, s in programmed.items() if s is None),
    }
    proxy = result.extra.get("kube_proxy") or {}
    costs = [r["cost"] for r in proxy.values() if not (r.get("cost") or {}).get("error")]
    seconds = _avg([c["seconds"] for c in costs])
    cpu = _avg([c["cpu_seconds"] for c in costs])
    out["kube_proxy"] = {
        "sli_mean": _avg([r["sli"]["mean"] for r in proxy.values()]),
        "full_syncs": sum(c["full_syncs"]["count"] for c in costs),
        "full_mean": _avg([c["full_syncs"]["mean"] for c in costs]),
        "partial_mean": _avg([c["partial_syncs"]["mean"] for c in costs]),
        "partial_p90": _avg([c["partial_syncs"]["p90"] for c in costs]),
        "iptables_rules": _top([c["rules"] for c in costs]),
        "cpu_per_minute": None if cpu is None or not seconds else cpu / seconds * 60,
        "rss_mib": None if (rss := _top([c["rss_bytes"] for c in costs])) is None else rss / 2**20,
    }
    probe = _avg(list((result.extra.get("probe_cpu_seconds") or {}).values()))
    span = result.finished_at - result.started_at if result.finished_at else None
    out["chaoskit"] = {
        **chaoskit_cost,
        "probe_cpu_per_minute": probe / span * 60 if probe is not None and span else None,
    }
    return out


def _s(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


Cell = Callable[[Mapping[str, Any]], str]
COLUMNS: tuple[tuple[str, Cell], ...] = (
    ("mode", lambda r: r["mode"]),
    ("Services", lambda r: f"{r['services']:,}"),
    ("n", lambda r: str(r["rules_programmed"]["count"])),
    *(
        (f"{short} {stat}", lambda r, st=stage, sx=stat: _s(r[st][sx]))
        for stage, short in (("rules_programmed", "rules"), ("traffic_follows", "traffic"))
        for stat in STATISTICS
    ),
    ("rules ±", lambda r: _s(r["rules_programmed"]["precision"])),
    ("bulk s", lambda r: _s(r["background"]["programmed_s"])),
    ("SLI mean", lambda r: _s(r["kube_proxy"]["sli_mean"])),
    ("partial mean", lambda r: _s(r["kube_proxy"]["partial_mean"])),
    ("full n", lambda r: str(r["kube_proxy"]["full_syncs"])),
    ("full mean", lambda r: _s(r["kube_proxy"]["full_mean"])),
    (
        "ipt rules",
        lambda r: "—" if r["kube_proxy"]["iptables_rules"] is None else f"{r['kube_proxy']['iptables_rules']:.0f}",
    ),
    ("kp CPU s/min", lambda r: _s(r["kube_proxy"]["cpu_per_minute"])),
    ("kp MiB", lambda r: "—" if r["kube_proxy"]["rss_mib"] is None else f"{r['kube_proxy']['rss_mib']:.0f}"),
    ("probe CPU s/min", lambda r: _s(r["chaoskit"]["probe_cpu_per_minute"])),
)
LEGEND = (
    "seconds; rules/traffic: rules_programmed and traffic_follows pooled over every node; rules ±: the typical "
    "sample's precision (the probe's two rules reads that bracket it); bulk s: kube-proxy "
    "programming the background Services once the API accepted them (slowest node); SLI: "
    "kubeproxy_network_programming_duration_seconds; partial/full: its syncs while measuring; ipt rules: "
    "kubeproxy_sync_proxy_rules_iptables_total (nftables exports none); kp: kube-proxy's own CPU and memory; "
    "probe: chaoskit's in-node probe, per node"
)


def table_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Plain aligned columns, as a terminal or a pipe shows them."""
    cells = [[name for name, _ in COLUMNS]] + [[cell(r) for _, cell in COLUMNS] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(c.ljust(w) if i < 1 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in cells
    ]
    return [*lines, LEGEND]


def curves(rows: Sequence[Mapping[str, Any]], stage: str) -> str:
    """The stage's p50 and p90 per mode against the Services, as an SVG."""
    modes = sorted({r["mode"] for r in rows})
    series: dict[str, list[tuple[float, float]]] = {}
    colour_of: dict[str, int] = {}
    dash_of: dict[str, int] = {}
    for m, mode in enumerate(modes):
        for d, stat in enumerate(("p50", "p90")):
            name = f"{mode} {stat}"
            series[name] = [
                (r["services"], r[stage][stat]) for r in rows if r["mode"] == mode and r[stage][stat] is not None
            ]
            colour_of[name], dash_of[name] = m, d
    return curve_svg(series, colour_of=colour_of, dash_of=dash_of, y_label=f"{stage} seconds")


def render_html(rows: Sequence[Mapping[str, Any]], context: Mapping[str, Any]) -> str:
    """One self-contained page: the curves, then the table with every figure."""
    charts = {stage: Markup(curves(rows, stage)) for stage in STAGES}  # noqa: S704 - our own escaped SVG
    header = [name for name, _ in COLUMNS]
    body = [[cell(r) for _, cell in COLUMNS] for r in rows]
    return TEMPLATES.get_template("rule_sync_scale.html.j2").render(
        charts=charts, header=header, body=body, legend=LEGEND, context=context
    )
