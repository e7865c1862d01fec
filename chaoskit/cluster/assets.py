"""Where the files chaoskit ships live: beside the package in a checkout, under chaoskit/_assets in a wheel
(pyproject.toml's force-include puts them there)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent


def _asset(checkout: str, packaged: str) -> Path:
    """The checkout's copy when there is one (so edits take effect at once), else the wheel's."""
    path = _PACKAGE.parent / checkout
    return path if path.exists() else _PACKAGE / "_assets" / packaged


def images_dir() -> Path:
    return _asset("images", "images")


def default_kind_config() -> Path:
    return _asset("kind-config.yaml", "kind-config.yaml")


def prometheus_rules() -> Path | None:
    path = _asset("deploy/prometheus/rules.yml", "prometheus/rules.yml")
    return path if path.is_file() else None


def deploy_dir() -> Path:
    """The manifests `chaoskit install` applies: namespace, CRD, RBAC, operator, agent."""
    return _asset("deploy/chaoskit", "deploy/chaoskit")
