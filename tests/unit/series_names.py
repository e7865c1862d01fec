"""The series a PromQL query reads, for tests that check a rule or a panel names only what chaoskit exposes."""

from __future__ import annotations

from chaoskit.model.promql import AGGREGATIONS, FUNCTIONS, lex

_NOT_SERIES = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}
)
_LABEL_LISTS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})  # (labels) follow


def series_names(query: str) -> set[str]:
    """Every metric name the query selects: words outside {}, [] and label lists that call nothing."""
    tokens = lex(query)
    names: set[str] = set()
    depth, in_labels = 0, False  # depth: inside {} or []; in_labels: inside by (...) and the like
    for i, t in enumerate(tokens):
        if t.kind == "op" and t.text in "{[":
            depth += 1
        elif t.kind == "op" and t.text in "}]":
            depth -= 1
        elif t.kind == "op" and t.text == ")" and in_labels:
            in_labels = False
        elif t.kind == "word" and t.text in _LABEL_LISTS and tokens[i + 1].text == "(":
            in_labels = True
        elif t.kind == "word" and not depth and not in_labels and tokens[i + 1].text != "(":
            if t.text not in _NOT_SERIES and t.text not in FUNCTIONS and t.text not in AGGREGATIONS:
                names.add(t.text)
    return names
