"""One node round-trip for the scripts asked at about the same moment, and nothing read twice in it."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from chaoskit.diagnosers.kit.batch import NodeBatches


class Recorder:
    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, str], tuple[tuple[str, ...], ...]]] = []

    def __call__(
        self, node: str, commands: Mapping[str, str], timeout: float, chains: Sequence[Sequence[str]]
    ) -> dict[str, str]:
        self.runs.append((node, dict(commands), tuple(tuple(c) for c in chains)))
        return {name: f"{node}:{cmd}" for name, cmd in commands.items()}


def _ask_at_once(batches: NodeBatches[str], asks: list[tuple[str, dict[str, str], list[tuple[str, ...]]]]) -> list:
    got: list = [None] * len(asks)
    ready = threading.Barrier(len(asks))

    def one(i: int) -> None:
        node, commands, chains = asks[i]
        ready.wait()
        got[i] = batches.sections(node, commands, 10, chains)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(asks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got


def test_scripts_asked_together_run_once_per_node_and_each_asker_gets_its_own_names() -> None:
    run = Recorder()
    batches = NodeBatches(run, "missing", linger=0.2)
    got = _ask_at_once(
        batches,
        [
            ("cp", {"process": "pgrep etcd", "containers": "crictl ps -a -o json"}, []),
            ("cp", {"process": "pgrep kube-apiserver", "containers": "crictl ps -a -o json"}, []),
            ("w1", {"process": "pgrep kube-proxy"}, []),
        ],
    )
    assert sorted(node for node, _, _ in run.runs) == ["cp", "w1"]
    cp = next(commands for node, commands, _ in run.runs if node == "cp")
    assert sorted(cp.values()) == ["crictl ps -a -o json", "pgrep etcd", "pgrep kube-apiserver"]  # once each
    assert got[0] == {"process": "cp:pgrep etcd", "containers": "cp:crictl ps -a -o json"}
    assert got[1] == {"process": "cp:pgrep kube-apiserver", "containers": "cp:crictl ps -a -o json"}
    assert got[2] == {"process": "w1:pgrep kube-proxy"}


def test_the_same_window_asked_by_two_runs_once_and_a_different_one_is_kept() -> None:
    run = Recorder()
    batches = NodeBatches(run, "missing", linger=0.2)
    window = {"before": "scrape", "wait": "sleep 1", "after": "scrape"}
    other = {"a": "scrape", "w": "sleep 2", "b": "scrape"}
    got = _ask_at_once(
        batches,
        [
            ("cp", window, [("before", "wait", "after")]),
            ("cp", {"x": window["before"], "y": window["wait"], "z": window["after"]}, [("x", "y", "z")]),
            ("cp", other, [("a", "w", "b")]),
        ],
    )
    ((_, commands, chains),) = run.runs
    assert len(chains) == 2 and len(commands) == 6  # the third's window is another length: its own chain
    assert got[0] == {"before": "cp:scrape", "wait": "cp:sleep 1", "after": "cp:scrape"}
    assert got[1] == {"x": "cp:scrape", "y": "cp:sleep 1", "z": "cp:scrape"}
    # a chained command is never merged with a lone one: its moment is part of what it says
    assert got[2]["w"] == "cp:sleep 2"


def test_a_script_asked_after_the_batch_left_starts_its_own() -> None:
    run = Recorder()
    batches = NodeBatches(run, "missing", linger=0.0)
    assert batches.sections("cp", {"a": "true"}, 5) == {"a": "cp:true"}
    assert batches.sections("cp", {"b": "true"}, 5) == {"b": "cp:true"}
    assert len(run.runs) == 2


def test_a_command_whose_output_never_came_back_is_the_missing_value() -> None:
    batches = NodeBatches(lambda node, commands, timeout, chains: {}, "missing", linger=0.0)
    assert batches.sections("cp", {"a": "true"}, 5) == {"a": "missing"}
