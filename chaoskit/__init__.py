"""chaoskit: break the real Kubernetes control plane on kind, measure and diagnose what happens."""

__version__ = "0.1.0"
