"""Exporters: what chaoskit's run journals look like to other tools (Prometheus)."""
