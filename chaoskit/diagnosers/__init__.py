"""Diagnosers, one module per component (and reverts.py, chaoskit's own): collect evidence through the seams, then
judge it without I/O. kit/ holds what they are built from.

`diagnose()` (chaoskit.diagnosers.run) runs them; `load_catalog(("chaoskit.diagnosers",))` registers them.
"""
