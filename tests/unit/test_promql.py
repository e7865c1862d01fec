"""chaoskit.model.promql: the offline PromQL check passes what SLO probes write and says what is wrong, and where."""

from __future__ import annotations

import re

import pytest

from chaoskit.model.promql import AGGREGATIONS, ARITY, FUNCTIONS, promql_problem

VALID = [
    'sum(rate(http_requests_total{job="shop",code!~"5.."}[5m])) / sum(rate(http_requests_total{job="shop"}[5m]))',
    "histogram_quantile(0.99, sum by (le) (rate(x_bucket[1m])))",
    "up == 0",
    "1 - avg(rate(a[1m])) by (instance)",
    "a * on(job) group_left(version) b",
    "a / ignoring(code) group_left b",
    "a * on(job) group_right c",
    "max_over_time(rate(x[1m])[10m:30s])",
    "max_over_time(deriv(rate(x[1m])[5m:1m])[10m:])",
    "x offset -5m",
    "x @ end()",
    "x @ 1609746000",
    "x @ start() offset 1h",
    "rate(x[5m] offset 1w)",
    "sum(rate(x[5m] @ end()))",
    "-x ^ 2",
    "2 ^ 3 ^ 2",
    "-(x) + +y",
    "topk(3, x)",
    "bottomk(5, sum by (pod) (x))",
    "quantile(0.9, rate(x[5m])) by (job)",
    'count_values("v", x)',
    "limitk(2, x) or limit_ratio(0.5, x)",
    '{__name__="up"}',
    '{__name__=~"http_.*", job!=""}',
    "sum without(job)(x)",
    'absent(up{job="x"})',
    "vector(1)",
    "time() - x > bool 300",
    "x % 2 == bool 1",
    'count(up{job="shop"} == 1) >= 2',
    "x and on(job) y unless z or w",
    "1e3 + 0x1f + Inf - NaN + .5 + 1_000",
    "rate(x[1h30m]) + rate(x[500ms]) + rate(x[300])",
    'job:http_requests:rate5m{job="shop"} > 0.5',
    "x{job='it\\'s', env!=\"prod\",}",
    "x{job=~`raw\\d+`}",
    r'label_replace(up, "host", "$1", "instance", "(.*):\\d+")',
    'label_join(up, "a", ",", "b", "c")',
    'sort_by_label(up, "job", "instance")',
    "predict_linear(node_filesystem_free_bytes[1h], 4 * 3600) < 0",
    "clamp(x, 0, 1) + round(x, 0.1) + day_of_week() + pi()",
    "histogram_quantile(0.5, rate(x_bucket[5m])) atan2 y",
    "SUM BY (job) (rate(x[5m])) AND ON (job) y",
    'sum by ("service.name") (x) / {"my.metric", job="a"}',
    'info(up, {k8s_cluster_name=~".+"})',
    "sum(x)  # errors\n  / sum(y)  # all",
]

INVALID = [
    ("sum(rate(x[5m])", "expected an operator, ',' or ')' after 'rate(x[5m])', found the end", 16),
    ("rate(x[5q])", "bad number or duration '5q'", 8),
    ("x[5m1h]", "bad number or duration '5m1h'", 3),
    ('x{job="a"', "expected ',' or '}' after '\"a\"', found the end", 10),
    ("x{job=}", "expected a quoted string after '=', found '}'", 7),
    ('x{job=~"a", env}', "expected =, !=, =~ or !~ after 'env', found '}'", 16),
    ('x{job=~"a" env="b"}', "expected ',' or '}' after '\"a\"', found 'env'", 12),
    ('x{job="a\\q"}', "bad escape '\\\\q'", 9),
    ("foo(x)", "unknown function 'foo'", 1),
    ("RATE(x[5m])", "unknown function 'RATE' at character 1; did you mean 'rate'?", 1),
    ("x +", "expected an expression after '+', found the end", 4),
    ("* x", "expected an expression, found '*'", 1),
    ("sum by x", "expected '(' after 'by', found 'x'", 8),
    ("sum by (job)", "expected '(' after 'by (job)', found the end", 13),
    ("sum(x) by (a:b)", "expected a label name after '(', found 'a:b'", 12),
    ("sum(x) by (a) by (b)", "expected an operator or the end after ')', found 'by'", 15),
    ("x[5m", "expected ':' or ']' after '5m', found the end", 5),
    ('"unterminated', "the string opened at character 1 never closes", 1),
    ("x ==", "expected an expression after '==', found the end", 5),
    ("x = 1", "expected an operator or the end after 'x', found '='", 3),
    ("x offset", "expected a duration after 'offset', found the end", 9),
    ("x @", "expected a timestamp, start() or end() after '@', found the end", 4),
    ("(x))", "expected an operator or the end after ')', found ')'", 4),
    ("(x y)", "expected an operator or ')' after 'x', found 'y'", 4),
    ("x y", "expected an operator or the end after 'x', found 'y'", 3),
    ("x $ y", "unexpected character '$'", 3),
    ("rate(x[5m],)", "expected an expression after ',', found ')'", 12),
    ("rate(x[5m], 1)", "rate takes 1 argument, got 2", 1),
    ("topk(x)", "topk takes 2 arguments, got 1", 1),
    ('label_replace(up, "a")', "label_replace takes 5 arguments, got 2", 1),
    ("sum(x)[5m]", "a range [...] needs a metric selector right before it", 7),
    ("sum(x) offset 5m", "offset needs a metric selector, range or subquery before it", 8),
    ("x offset 5m [5m]", "a range [...] goes before offset and @", 13),
    ("x offset 5m offset 1m", "offset is given twice", 13),
    ("x and bool y", "bool goes only with a comparison", 7),
    ("x * group_left y", "group_left needs on(...) or ignoring(...) before it", 5),
    ("x or on(a) group_left y", "group_left does not go with 'or'", 12),
    ('{job=""}', "a selector without a metric name needs a matcher that rejects the empty value", 1),
    ("{}", "a selector without a metric name", 1),
    ("", "the query is empty", None),
    ("  \n\t ", "the query is empty", None),
    ("# only a comment", "the query is empty", None),
    ("(" * 2000 + "x" + ")" * 2000, "nested too deeply to check", None),
]


@pytest.mark.parametrize("query", VALID)
def test_what_slo_probes_write_parses(query: str) -> None:
    assert promql_problem(query) == ""


@pytest.mark.parametrize(("query", "fragment", "character"), INVALID)
def test_a_broken_query_says_what_is_wrong_and_at_which_character(
    query: str, fragment: str, character: int | None
) -> None:
    problem = promql_problem(query)
    assert problem.startswith("not PromQL: ") and fragment in problem
    where = re.search(r"at character (\d+)", problem)
    assert (int(where.group(1)) if where else None) == character


def test_long_context_is_shortened_to_its_end() -> None:
    problem = promql_problem('sum(rate(http_requests_total{job="shop", code=~"5.."}[5m])')
    assert 'after \'...b="shop", code=~"5.."}[5m])\', found the end at character 59' in problem


def test_the_tables_name_only_known_functions_and_aggregations() -> None:
    assert set(ARITY) <= FUNCTIONS and not FUNCTIONS & set(AGGREGATIONS)
    assert AGGREGATIONS["topk"] == 2 and AGGREGATIONS["sum"] == 1
