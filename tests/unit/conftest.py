"""Unit tests never read the user's kubeconfig: which cluster a command acts on follows its current context."""

from __future__ import annotations

import pytest

from chaoskit.seams import kubeconfig


@pytest.fixture(autouse=True)
def no_users_kubeconfig(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setattr(kubeconfig, "DEFAULT", str(tmp_path_factory.getbasetemp() / "no-kubeconfig"))
