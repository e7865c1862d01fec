"""The rule-sync sweep's rows, table and curves, from measurement results made by hand."""

from __future__ import annotations

from chaoskit.measurements.rule_sync_sli import SliSnapshot, kube_proxy_cost
from chaoskit.model.timeline import MeasurementResult, Sample
from chaoskit.reports.curve import curve_svg
from chaoskit.reports.rule_sync_scale import render_html, row, table_lines
from chaoskit.seams.scrape import Histogram

T0 = 1_000_000.0


def _hist(count: float, total: float) -> Histogram:
    return Histogram(((0.1, count / 2), (1.0, count), (float("inf"), count)), count, total)


def _result(seconds: list[float]) -> MeasurementResult:
    res = MeasurementResult("rule-sync", "rule_sync", T0, T0 + 60)
    for i, s in enumerate(seconds):
        for node in ("w1", "w2"):
            res.samples.append(Sample("rule_sync", "rules_programmed", "kube-proxy", f"{i}@{node}", T0, T0 + s, 0.1))
    before = SliSnapshot("w1", T0, 0, 0, full=_hist(2, 1.0), partial=_hist(10, 1.0), rules=100, cpu=5.0, rss=2**26)
    after = SliSnapshot("w1", T0 + 60, 4, 4, full=_hist(2, 1.0), partial=_hist(20, 3.0), rules=900, cpu=8.0, rss=2**27)
    cost = kube_proxy_cost(before, after)
    sli = {"mean": 1.0, "count": 4, "error": ""}
    res.extra = {
        "changes": [{} for _ in seconds],
        "kube_proxy": {"w1": {"sli": sli, "cost": cost}, "w2": {"sli": sli, "cost": {"error": "no answer"}}},
        "probe_cpu_seconds": {"w1": 6.0, "w2": None},
    }
    return res


def test_kube_proxy_s_cost_is_the_difference_between_two_of_its_own_scrapes() -> None:
    cost = _result([0.5]).extra["kube_proxy"]["w1"]["cost"]
    assert cost["full_syncs"]["count"] == 0 and cost["full_syncs"]["mean"] is None, "no full sync in between"
    assert cost["partial_syncs"]["count"] == 10 and cost["partial_syncs"]["mean"] == 0.2
    assert cost["cpu_seconds"] == 3.0 and cost["rules"] == 900 and cost["rss_bytes"] == 2**27
    restarted = kube_proxy_cost(SliSnapshot("w1", T0, cpu=9.0), SliSnapshot("w1", T0 + 1, cpu=1.0))
    assert restarted["cpu_seconds"] is None, "a restart resets the counter: no figure, not a negative one"


def test_a_row_pools_the_nodes_and_leaves_out_one_that_did_not_answer() -> None:
    r = row("iptables", 1000, _result([0.2, 0.4, 0.6]), {"accepted_s": 9.0, "programmed_s": {"w1": 2.0, "w2": 3.0}}, {})
    assert r["rules_programmed"]["count"] == 6 and round(r["rules_programmed"]["max"], 3) == 0.6
    assert r["background"]["programmed_s"] == 3.0, "the slowest node"
    assert r["kube_proxy"]["cpu_per_minute"] == 3.0 and r["kube_proxy"]["rss_mib"] == 128
    assert r["chaoskit"]["probe_cpu_per_minute"] == 6.0


def test_the_table_is_plain_aligned_columns_and_the_page_draws_a_curve_per_mode() -> None:
    rows = [
        row(mode, n, _result([0.1 * k * n / 100 for k in range(1, 7)]), None, {})
        for mode in ("iptables", "nftables")
        for n in (100, 1000)
    ]
    lines = table_lines(rows)
    assert not any(ch in "".join(lines) for ch in "│┃━─"), "no box drawing"
    assert len({len(line) for line in lines[:-1]}) == 1, "every row as wide as the header"
    page = render_html(rows, {"host": "h", "when": "2026-12-05"})
    assert page.count("<svg") == 2 and "nftables p50" in page and "iptables p90" in page


def test_a_curve_has_one_line_per_series_on_a_log_axis() -> None:
    svg = curve_svg({"a": [(100, 1.0), (10_000, 3.0)], "b": [(100, 0.5), (1_000, 0.7), (10_000, 9.0)], "none": []})
    assert svg.count("<polyline") == 2 and ">none<" not in svg
    assert ">10s<" in svg, "the axis tops at the next 1-2-5 step above the highest figure"
    assert ">1,000<" in svg and ">10,000<" in svg
