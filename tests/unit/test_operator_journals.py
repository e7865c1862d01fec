"""A run's journal mirrored into a ConfigMap off the run's thread: it lands after each entry, lags while the API
does not answer and catches up, and a new operator pod restores it to revert from."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from chaoskit.journal import Journal
from chaoskit.seams.kube import FakeKube, KubeError
from chaoskit_operator.journals import KEY, Mirror, configmap_name, restore

PATH = f"/api/v1/namespaces/ns/configmaps/{configmap_name('exp', 'abcdef123456')}"


class Flaky(FakeKube):
    """An API that refuses the first `down` applies (the API server under a fault)."""

    def __init__(self, down: int) -> None:
        super().__init__()
        self.down = down

    def apply(self, obj: dict[str, Any]) -> Any:
        if self.down > 0:
            self.down -= 1
            raise KubeError("connection refused")
        return super().apply(obj)


def _wait_for(check: Any, timeout: float = 10) -> None:
    end = time.monotonic() + timeout
    while not check() and time.monotonic() < end:
        time.sleep(0.05)


def test_every_entry_reaches_the_configmap_even_after_the_api_refused(tmp_path: Path) -> None:
    kube = Flaky(down=1)
    mirror = Mirror(kube, "ns", "exp", "abcdef123456")
    journal = Journal(tmp_path / "j.jsonl", on_append=mirror)
    journal.append("run-started", playbook="p")
    journal.append("reverted", id="x")
    mirror.close()
    text = kube.objects[PATH]["data"][KEY]
    assert text == journal.path.read_text() and text.count("\n") == 2
    assert kube.objects[PATH]["metadata"]["ownerReferences"][0]["uid"] == "abcdef123456"


def test_a_new_pod_restores_the_journal_it_never_wrote(tmp_path: Path) -> None:
    kube = FakeKube()
    mirror = Mirror(kube, "ns", "exp", "abcdef123456")
    Journal(tmp_path / "old" / "j.jsonl", on_append=mirror).append("run-started", playbook="p")
    mirror.close()
    dest = tmp_path / "new" / "j.jsonl"
    assert restore(kube, "ns", "exp", "abcdef123456", dest)
    assert [e.kind for e in Journal(dest).entries()] == ["run-started"]
    assert not restore(kube, "ns", "other", "0000000000", tmp_path / "none.jsonl")
