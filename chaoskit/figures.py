"""Figures as people read them: seconds to three significant figures and at most two decimals, never a float's
seventeen digits ("±0.04s", not "±0.04047966003417969s"); a figure under a hundredth keeps its one digit of
milliseconds ("±0.001s", a clock's precision), which two decimals would round to a zero nobody measured."""

from __future__ import annotations

import math

SMALLEST = 0.0005  # below this three decimals would print 0.000: say "<0.001s" instead of a zero not measured


def seconds(value: float | None, none: str = "—") -> str:
    """`value` seconds for people: "0.001s", "0.04s", "1.23s", "16.8s", "253s"; `none` when there is no figure."""
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
        return "<0.001s" if v > 0 else ">-0.001s"
    # three significant figures, at most two decimals; under a hundredth its one digit of milliseconds
    decimals = 3 if size < 0.0095 else 2 if size < 9.995 else 1 if size < 99.95 else 0
    text = f"{v:.{decimals}f}"
    return (text.rstrip("0").rstrip(".") if "." in text else text) + "s"
