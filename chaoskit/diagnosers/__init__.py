"""Diagnosers, one module per component: collect evidence through the seams, then judge it without I/O.

`diagnose()` (chaoskit.diagnosers.run) runs them; `load_catalog(("chaoskit.diagnosers",))` registers them.
"""
