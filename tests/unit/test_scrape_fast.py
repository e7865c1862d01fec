"""The plain exposition parser agrees with prometheus_client's on everything recorded, and the node-side sum over
labels keeps the histograms a diagnosis judges."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest

from chaoskit.seams.scrape import Metrics, _plain_samples, _sum_over_command, parse

RECORDED = sorted(Path("tests/unit/data").rglob("*.prom"))


def _key(metrics_samples: tuple) -> list:
    return [(s.name, dict(s.labels), "nan" if math.isnan(s.value) else s.value) for s in metrics_samples]


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: str(p.relative_to("tests/unit/data")))
def test_the_fast_parser_reads_what_prometheus_client_reads(path: Path) -> None:
    text = path.read_text()
    fast = _plain_samples(text)
    assert fast is not None
    assert _key(fast) == _key(Metrics.of(parse(text)).samples)


def test_unusual_text_goes_to_the_full_parser() -> None:
    assert _plain_samples('x{a="1" b="2"} 1\n') is None  # no comma between labels
    assert _plain_samples("x one\n") is None
    assert Metrics.parse("x one\n").error  # and the full parser's complaint is kept


def test_escaped_label_values_are_unescaped_as_prometheus_client_does() -> None:
    text = 'x{path="a\\\\b",q="say \\"hi\\"",n="l1\\nl2"} 2\n'
    assert _key(_plain_samples(text) or ()) == _key(Metrics.of(parse(text)).samples)


def test_the_node_side_sum_keeps_only_the_wanted_labels_and_adds_the_rest_up() -> None:
    text = (
        "# TYPE d histogram\n"
        'd_bucket{resource="pods",verb="GET",subresource="",le="0.1"} 2\n'
        'd_bucket{resource="nodes",verb="GET",subresource="",le="0.1"} 3\n'
        'd_bucket{resource="pods",verb="LIST",subresource="",le="0.1"} 5\n'
        'd_count{resource="pods",verb="GET",subresource=""} 4\n'
        'other{verb="GET"} 7\n'
    )
    out = subprocess.run(
        ["sh", "-c", _sum_over_command("d", ("verb", "subresource", "le"))], input=text, capture_output=True, text=True
    )
    summed = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in Metrics.parse(out.stdout).samples}
    assert summed == {
        ("d_bucket", (("le", "0.1"), ("subresource", ""), ("verb", "GET"))): 5.0,
        ("d_bucket", (("le", "0.1"), ("subresource", ""), ("verb", "LIST"))): 5.0,
        ("d_count", (("subresource", ""), ("verb", "GET"))): 4.0,
        ("other", (("verb", "GET"),)): 7.0,
    }
