"""The flags every command shares mean the same everywhere: -o/--output is the output format, --cluster names the
cluster, and the older names (--name, diagnose's --format, textfile's --output) still work, out of --help."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from chaoskit.cli import cli

CTX = click.Context(cli)


def commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name in group.list_commands(CTX):
        command = group.get_command(CTX, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield (*path, name), command


def test_o_is_output_and_a_format_on_every_command() -> None:
    for path, command in commands():
        for param in command.params:
            if "-o" in param.opts:
                assert "--output" in param.opts, path
                assert not isinstance(param.type, click.Path), path
                assert getattr(param, "default", None) == "table", path


def test_the_cluster_is_named_by_cluster_on_every_command() -> None:
    for path, command in commands():
        names = {o for p in command.params for o in p.opts}
        if "--name" in names and path[0] != "agent":  # agent setup's --name names its CA, not a cluster
            assert "--cluster" in names, path


@pytest.mark.parametrize(
    ("path", "args", "dest", "value"),
    [
        (("cluster", "down"), ["--name", "lab"], "cluster", "lab"),
        (("cluster", "up"), ["--name", "lab"], "cluster", "lab"),
        (("cluster", "status"), ["--name", "lab"], "cluster", "lab"),
        (("measure", "hpa"), ["--name", "lab"], "cluster", "lab"),
        (("metrics", "prometheus", "up"), ["--name", "lab"], "cluster", "lab"),
        (("diagnose",), ["--format", "json"], "fmt", "json"),
        (("metrics", "textfile"), ["--output", "x.prom"], "out", "x.prom"),
    ],
)
def test_an_older_name_still_works_and_is_left_out_of_help(
    path: tuple[str, ...], args: list[str], dest: str, value: str
) -> None:
    command: click.Command = cli
    for word in path:
        assert isinstance(command, click.Group)
        found = command.get_command(CTX, word)
        assert found is not None
        command = found
    ctx = command.make_context(path[-1], list(args), resilient_parsing=True)  # only the flags parsed, nothing checked
    assert str(ctx.params[dest]) == value
    older = next(a for a in args if a.startswith("--"))
    shown = CliRunner().invoke(cli, [*path, "--help"]).output
    assert f"{older} " not in shown and f"{older}," not in shown
