"""Steady-state checks: what "healthy" means before a playbook injects anything and after it reverts."""
