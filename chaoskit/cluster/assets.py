"""Where the files that build the cluster live: images/ in a checkout, chaoskit/_images in a wheel."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent


def images_dir() -> Path:
    checkout = _PACKAGE.parent / "images"
    return checkout if checkout.is_dir() else _PACKAGE / "_images"


def default_kind_config() -> Path:
    checkout = _PACKAGE.parent / "kind-config.yaml"
    return checkout if checkout.is_file() else _PACKAGE / "_images" / "kind-config.yaml"
