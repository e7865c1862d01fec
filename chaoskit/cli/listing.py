"""A listing command's output, as kubectl prints one: `-o table` (the default), `wide`, `name`, `json`, `yaml` and
`jsonpath=TEMPLATE`.

On a terminal the table is drawn; in a pipe it is plain columns as kubectl's (upper-case headers, columns three
spaces apart, one row a line, nothing cut or wrapped), so `grep`, `awk` and `cut` read it. `wide` adds the columns
that make a row long; `name` prints `<kind>/<name>` a line; `json` and `yaml` the rows as a List (`items`), or the
command's whole document where it says more than its rows, which jsonpath reads too (`{.items[*].name}`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from chaoskit.cli import jsonpath
from chaoskit.cli.options import emit, output_option
from chaoskit.errors import UsageError

FORMATS = ("table", "wide", "name", "json", "yaml")
GAP = "   "  # between plain columns, as kubectl's


@dataclass(frozen=True)
class Column:
    header: str
    key: str
    wide: bool = False  # shown with -o wide only


@dataclass(frozen=True)
class Listing:
    kind: str  # what -o name prints before each name
    columns: tuple[Column, ...]
    rows: list[dict[str, Any]] = field(default_factory=list)
    name_key: str = "name"
    whole: dict[str, Any] | None = None  # what -o json prints when it is more than the rows (jsonpath reads it too)

    def document(self) -> dict[str, Any]:
        return self.whole if self.whole is not None else {"kind": "List", "items": self.rows}


class OutputFormat(click.ParamType[str, Any]):
    """table, wide, name, json, yaml or jsonpath=TEMPLATE (the template parsed now: a bad one is a usage error)."""

    name = "format"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if text in FORMATS:
            return text
        if text.startswith("jsonpath="):
            try:
                jsonpath.parse(text[len("jsonpath=") :])
            except UsageError as exc:
                self.fail(str(exc), param, ctx)
            return text
        self.fail(f"{text!r}: use one of {', '.join(FORMATS)} or jsonpath=TEMPLATE", param, ctx)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join(FORMATS) + "|jsonpath=TEMPLATE]"


listing_output_option = output_option(
    FORMATS,
    OutputFormat(),
    help="table, wide (more columns), name (kind/name a line), json, yaml, or jsonpath=TEMPLATE as kubectl's "
    "(e.g. jsonpath='{range .items[*]}{.name}{\"\\n\"}{end}').",
)


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "<none>"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value) or "<none>"
    return str(value)


def plain(columns: Sequence[Column], rows: Sequence[dict[str, Any]]) -> str:
    """Aligned plain columns, kubectl's way: nothing cut, one row a line, no trailing spaces."""
    table = [[c.header.upper() for c in columns]] + [[_cell(r.get(c.key)) for c in columns] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    return "\n".join(GAP.join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in table)


def drawn(columns: Sequence[Column], rows: Sequence[dict[str, Any]], console: Console, name_key: str = "") -> None:
    """A drawn table as wide as the console: the other columns wrap so that the name column is never cut."""
    table = Table()
    for c in columns:
        table.add_column(c.header, no_wrap=c.key == name_key)
    for r in rows:
        table.add_row(*(_cell(r.get(c.key)) for c in columns))
    console.print(table)


def render(
    listing: Listing,
    output: str,
    tty: bool | None = None,
    echo: Callable[[str], None] = click.echo,
    console: Console | None = None,
) -> None:
    """Print `listing` as `output` says; `tty` (default: whether stdout is a terminal) draws the table on `console`
    (default: stdout at the terminal's width)."""
    if output in ("json", "yaml"):
        emit(listing.document(), output)
        return
    if output.startswith("jsonpath="):
        echo(jsonpath.render(output[len("jsonpath=") :], listing.document()))
        return
    if output == "name":
        for r in listing.rows:
            echo(f"{listing.kind}/{r[listing.name_key]}")
        return
    columns = [c for c in listing.columns if output == "wide" or not c.wide]
    if tty if tty is not None else sys.stdout.isatty():
        drawn(columns, listing.rows, console or Console(highlight=False), listing.name_key)
    else:
        echo(plain(columns, listing.rows))
