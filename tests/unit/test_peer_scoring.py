"""The peers' problems are scored as ITBench-AA scores an agent: a case counts only when every root-cause entity is
named, then by precision; a no-fault control scores only for naming nothing."""

from __future__ import annotations

from tests.e2e.peers import PROBLEMS, named_roots, score


def finding(title: str, entity: str = "", severity: str = "warning", **more: object) -> dict[str, object]:
    return {"severity": severity, "title": title, "entity": entity, "component": "workloads"} | more


def test_every_root_named_counts_by_precision_and_a_miss_counts_nothing() -> None:
    roots = frozenset({"node/w2", "deployment/shop/web"})
    assert score(roots, {"node/w2", "deployment/shop/web"}).aa == 1.0
    assert score(roots, {"node/w2", "deployment/shop/web", "host/cpu", "service/shop/web"}).aa == 0.5
    assert score(roots, {"node/w2"}).aa == 0.0


def test_a_control_scores_only_for_naming_nothing() -> None:
    assert score(frozenset(), set()).aa == 1.0 and score(frozenset(), {"host/cpu"}).aa == 0.0


def test_the_named_roots_are_the_judged_findings_nothing_else_explains() -> None:
    doc = {
        "reports": [
            {"component": "kubelet", "subject": "w2", "findings": [finding("not running", component="kubelet")]},
            {
                "component": "workloads",
                "subject": "cp",
                "findings": [
                    finding("pinned", "deployment/shop/web", co_causes=["node/w2"]),
                    finding("slow", "service/shop/web", caused_by="node/w2"),
                    finding("a note", "configmap/x", severity="info"),
                    finding("Evidence could not be collected", "pod/x"),
                ],
            },
        ]
    }
    assert named_roots(doc) == {"kubelet/w2", "deployment/shop/web", "node/w2"}


def test_every_problem_is_runnable_or_says_why_not_and_names_its_roots() -> None:
    names = [p.name for p in PROBLEMS]
    assert len(names) == len(set(names))
    for p in PROBLEMS:
        assert p.skip or p.klass == "control" or p.entities, p.name
        assert "$NS" not in " ".join(p.entities | p.blameless), p.name
