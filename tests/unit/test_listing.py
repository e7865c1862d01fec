"""Listing output in a pipe as kubectl's: plain aligned columns, -o wide|name|json|yaml|jsonpath=..."""

from __future__ import annotations

import functools
import io
import json

import click
import pytest
from click.testing import CliRunner
from rich.console import Console

from chaoskit.cli import jsonpath
from chaoskit.cli.listing import Column, Listing, OutputFormat, plain, render
from chaoskit.cli.schema_words import parameter_rows
from chaoskit.errors import UsageError

COLUMNS = (Column("fault", "name"), Column("what it does", "summary"), Column("parameters", "params", wide=True))
ROWS = [
    {"name": "kubelet.stop", "summary": "kubelet stopped on a node (50 s stock, 30 s here).", "params": []},
    {"name": "kube-proxy.slow-sync", "summary": "slow syncs", "params": ["minSyncPeriod"]},
]


def _out(output: str) -> list[str]:
    lines: list[str] = []
    render(Listing("fault", COLUMNS, ROWS), output, tty=False, echo=lambda text: lines.extend(text.split("\n")))
    return lines


def test_in_a_pipe_a_table_is_plain_columns_with_upper_case_headers_nothing_cut_and_no_trailing_spaces() -> None:
    lines = _out("table")
    assert lines[0].split() == ["FAULT", "WHAT", "IT", "DOES"] and "PARAMETERS" not in lines[0]
    assert lines[1] == "kubelet.stop           kubelet stopped on a node (50 s stock, 30 s here)."
    assert all(line == line.rstrip() for line in lines) and not any(c in "".join(lines) for c in "│┃━─")
    # every column starts where its header does
    at = lines[0].index("WHAT")
    assert all(line[at - 3 : at] == "   " and line[at] != " " for line in lines)


def test_wide_adds_its_columns_and_an_empty_cell_says_none() -> None:
    lines = _out("wide")
    assert lines[0].endswith("PARAMETERS") and lines[1].endswith("<none>") and lines[2].endswith("minSyncPeriod")


def test_name_json_yaml_and_jsonpath() -> None:
    assert _out("name") == ["fault/kubelet.stop", "fault/kube-proxy.slow-sync"]
    assert _out("jsonpath={.items[*].name}") == ["kubelet.stop kube-proxy.slow-sync"]
    assert _out('jsonpath={range .items[*]}{.name}{"\\t"}{.params}{"\\n"}{end}') == [
        "kubelet.stop\t[]",
        'kube-proxy.slow-sync\t["minSyncPeriod"]',
        "",
    ]


def test_json_is_a_list_of_items(capsys: pytest.CaptureFixture[str]) -> None:
    render(Listing("fault", COLUMNS, ROWS), "json", tty=False)
    assert json.loads(capsys.readouterr().out) == {"kind": "List", "items": ROWS}


def test_plain_columns_align_on_the_longest_cell() -> None:
    text = plain((Column("a", "a"), Column("b", "b")), [{"a": "x", "b": "1"}, {"a": "longer", "b": "2"}])
    assert text.split("\n") == ["A        B", "x        1", "longer   2"]


@pytest.mark.parametrize(
    ("template", "data", "shown"),
    [
        ("{.a.b}", {"a": {"b": 3}}, "3"),
        ("{.a['b.c'][0]}", {"a": {"b.c": [True, False]}}, "true"),
        ("{.xs[-1]}", {"xs": [1, 2]}, "2"),
        ("{.missing}x", {}, "x"),
        ("{@}", {"k": 1}, '{"k": 1}'),
        ("n={range .xs[*]}[{@}]{end}", {"xs": [1, 2]}, "n=[1][2]"),
        ("a\\tb", {}, "a\tb"),
    ],
)
def test_jsonpath_reads_what_kubectl_users_write(template: str, data: object, shown: str) -> None:
    assert jsonpath.render(template, data) == shown


@pytest.mark.parametrize("template", ["{.a", "{range .a}x", "{end}", "{a.b}", "{.a b}"])
def test_a_template_that_does_not_parse_is_a_usage_error(template: str) -> None:
    with pytest.raises(UsageError, match="jsonpath"):
        jsonpath.parse(template)


def test_the_output_option_refuses_an_unknown_format_and_a_bad_template_before_anything_runs() -> None:
    @click.command()
    @click.option("-o", type=OutputFormat())
    def cmd(o: str) -> None:
        click.echo(o)

    assert CliRunner().invoke(cmd, ["-o", "wide"]).output == "wide\n"
    bad = CliRunner().invoke(cmd, ["-o", "xml"])
    assert bad.exit_code == 2 and "jsonpath=TEMPLATE" in bad.output
    assert CliRunner().invoke(cmd, ["-o", "jsonpath={.a"]).exit_code == 2


def test_parameters_read_as_rows_with_types_bounds_enums_and_defaults() -> None:
    schema = {
        "properties": {
            "mode": {"enum": ["a", "b"], "default": "a", "description": "Which\n  one."},
            "count": {"type": "integer", "minimum": 1, "maximum": 50, "default": 3},
            "period": {"anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "string"}]},
            "names": {"type": "array", "items": {"type": "string"}, "default": []},
            "kind": {"$ref": "#/$defs/Kind", "default": "Deployment"},
        },
        "required": ["period"],
        "$defs": {"Kind": {"enum": ["Deployment", "StatefulSet"]}},
    }
    rows = {r["name"]: r for r in parameter_rows(schema)}
    assert rows["mode"] == {"name": "mode", "type": "one of: a, b", "default": "a", "description": "Which one."}
    assert rows["count"]["type"] == "integer 1..50" and rows["count"]["default"] == "3"
    assert rows["period"]["type"] == "number >0.. | string" and rows["period"]["default"] == "(required)"
    assert rows["names"]["type"] == "list of string" and rows["names"]["default"] == "[]"
    assert rows["kind"]["type"] == "one of: Deployment, StatefulSet"


def test_every_other_table_draws_no_box_in_a_pipe() -> None:
    import io

    from rich.console import Console

    from chaoskit.reports.table import new_table

    t = new_table("stage", "p50", title="x")  # pytest's stdout is no terminal
    t.add_row("scheduled", "0.05")
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(t)
    assert t.box is None and not any(c in out.getvalue() for c in "│┃━─┏"), out.getvalue()


def test_faults_list_on_a_narrow_terminal_wraps_the_description_and_never_cuts_a_fault_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from chaoskit.cli import cli, faults
    from chaoskit.registry import FAULTS, load_catalog

    screen = io.StringIO()
    terminal = Console(file=screen, width=80, highlight=False, legacy_windows=False)
    monkeypatch.setattr(faults, "render", functools.partial(render, tty=True, console=terminal))
    assert CliRunner().invoke(cli, ["faults", "list"]).exit_code == 0
    load_catalog()
    shown = screen.getvalue()
    assert max(len(line) for line in shown.splitlines()) <= 80
    lines = [line.split("│")[1].strip() for line in shown.splitlines() if line.count("│") > 2]
    assert set(FAULTS.names()) <= set(lines)
