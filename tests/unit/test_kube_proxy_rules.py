"""The reads of a node's kube-proxy rules that need more than one look."""

from __future__ import annotations

from collections.abc import Sequence

from chaoskit.components import kube_proxy as kp
from chaoskit.seams.nodeexec import FakeNodeExec, Node
from chaoskit.seams.shell import Completed, FakeRunner

W = Node("w", "worker")


def _node_printing(out: str) -> FakeNodeExec:
    return FakeNodeExec(FakeRunner(responder=lambda argv: Completed(list(argv), 0, out)))


def test_rules_written_back_between_two_flushes_still_count_as_gone() -> None:
    assert kp.fewest_service_rules(_node_printing("7\n7\n0\n7\n"), W, looks=4, every=0.25) == 0
    assert kp.fewest_service_rules(_node_printing("7\n7\n8\n7\n"), W, looks=4, every=0.25) == 7


def test_looks_are_taken_on_the_node_in_one_round_trip_and_a_missing_one_is_no_answer() -> None:
    seen: list[Sequence[str]] = []

    def responder(argv: Sequence[str]) -> Completed:
        seen.append(argv)
        return Completed(list(argv), 0, "7\n7\n")

    assert kp.fewest_service_rules(FakeNodeExec(FakeRunner(responder=responder)), W, looks=4, every=0.25) is None
    assert len(seen) == 1 and "seq 4" in seen[0][-1] and "sleep 0.25" in seen[0][-1]
