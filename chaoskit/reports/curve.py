"""An inline SVG line chart of a figure against cluster size: one line per series (a kube-proxy mode and a
percentile), a logarithmic size axis, so a curve from 100 to 10,000 Services reads at a glance.

Plain SVG text, as the timelines: the HTML stays one self-contained file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

from chaoskit import figures
from chaoskit.reports.svg import PALETTE

Point = tuple[float, float]  # (size, seconds)
LEFT, RIGHT, TOP, BOTTOM, LEGEND_ROW = 64, 48, 16, 40, 18  # right: room for the last size's label
DASHES = ("", "6 4", "2 3")  # the series of one colour: p50 solid, p90 dashed, max dotted


def _nice_top(value: float) -> float:
    """The axis top: the first of 1, 2, 5 × 10^k at or above `value`."""
    if value <= 0:
        return 1.0
    base = 10 ** math.floor(math.log10(value))
    return float(next(m * base for m in (1, 2, 5, 10) if m * base >= value))


def curve_svg(
    series: Mapping[str, Sequence[Point]],
    *,
    colour_of: Mapping[str, int] | None = None,
    dash_of: Mapping[str, int] | None = None,
    x_label: str = "Services",
    y_label: str = "seconds",
    width: int = 720,
    height: int = 320,
) -> str:
    """Each series a polyline over the sizes it has a figure for; sizes on a log axis, seconds from 0."""
    drawn = {name: sorted(p for p in points if p[0] > 0) for name, points in series.items()}
    drawn = {name: points for name, points in drawn.items() if points}
    names = list(drawn)
    legend_h = LEGEND_ROW * len(names)
    total_h = height + legend_h
    if not drawn:
        empty = '<text x="8" y="24">no figures</text>'
        return f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="40">{empty}</svg>'
    xs = sorted({x for points in drawn.values() for x, _ in points})
    lo, hi = math.log10(xs[0]), math.log10(xs[-1])
    span = hi - lo or 1.0
    top = _nice_top(max(y for points in drawn.values() for _, y in points))
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (math.log10(x) - lo) / span * plot_w if len(xs) > 1 else LEFT + plot_w / 2

    def py(y: float) -> float:
        return TOP + plot_h - y / top * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h}" role="img" '
        f'font-family="sans-serif" font-size="12"><title>{escape(y_label)} against {escape(x_label)}</title>'
    ]
    for i in range(5):  # horizontal grid: 0, ¼, ½, ¾, top
        y = top * i / 4
        out.append(
            f'<line x1="{LEFT}" x2="{width - RIGHT}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#ddd"/>'
            f'<text x="{LEFT - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{figures.seconds(y)}</text>'
        )
    for x in xs:
        out.append(
            f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{TOP}" y2="{TOP + plot_h}" stroke="#eee"/>'
            f'<text x="{px(x):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{x:,.0f}</text>'
        )
    out.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle">{escape(x_label)} (log scale)</text>'
    )
    for n, name in enumerate(names):
        colour = PALETTE[(colour_of or {}).get(name, n) % len(PALETTE)]
        dash = DASHES[(dash_of or {}).get(name, 0) % len(DASHES)]
        points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in drawn[name])
        style = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2"{style} points="{points}"/>')
        out += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>' for x, y in drawn[name]]
        ly = height + n * LEGEND_ROW + 12
        out.append(
            f'<line x1="{LEFT}" x2="{LEFT + 28}" y1="{ly - 4}" y2="{ly - 4}" '
            f'stroke="{colour}" stroke-width="2"{style}/>'
            f'<text x="{LEFT + 36}" y="{ly}">{escape(name)}</text>'
        )
    out.append("</svg>")
    return "".join(out)
