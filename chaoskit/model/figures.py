"""Figures as people read them: seconds to three significant figures and at most two decimals, never a float's
seventeen digits ("±0.04s", not "±0.04047966003417969s")."""

from __future__ import annotations

import math

SMALLEST = 0.005  # below this two decimals would print 0.00: say "<0.01s" instead of a zero that was not measured


def seconds(value: float | None, none: str = "—") -> str:
    """`value` seconds for people: "0.04s", "1.23s", "16.8s", "253s"; `none` when there is no figure."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return none
    v = float(value)
    if math.isnan(v):
        return none
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    size = abs(v)
    if size == 0:
        return "0s"
    if size < SMALLEST:
        return "<0.01s" if v > 0 else ">-0.01s"
    decimals = 2 if size < 10 else 1 if size < 100 else 0  # three significant figures, at most two decimals
    text = f"{v:.{decimals}f}"
    return (text.rstrip("0").rstrip(".") if "." in text else text) + "s"
