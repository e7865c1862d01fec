"""Probes: the user's steady state sampled while a playbook runs, one module per kind (http, promql, k8s, command)
and the set that runs them around a run's phases (run.py)."""
