"""The chaoskit command line: thin Click commands over the library; data on stdout, progress on stderr."""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass

import click

from chaoskit import __version__
from chaoskit.errors import EXIT_INTERRUPTED, ChaoskitError


@dataclass
class Globals:
    kubeconfig: str | None
    context: str | None
    namespace: str | None
    via: str = "auto"  # how nodes are reached: auto, docker (kind on this host) or agent (chaoskit install)
    current: str = ""  # the kubeconfig's current-context, where a command acts on the cluster no flag named


# each command's module is imported only when that command runs: `chaoskit diagnose` need not load the engine
COMMANDS = {
    "cluster": "chaoskit.cli.cluster:cluster",
    "diagnose": "chaoskit.cli.diagnose:diagnose",
    "playbook": "chaoskit.cli.playbook:playbook",
    "validate": "chaoskit.cli.playbook:validate",
    "faults": "chaoskit.cli.faults:faults",
    "inject": "chaoskit.cli.faults:inject",
    "revert": "chaoskit.cli.faults:revert",
    "run": "chaoskit.cli.run:run",
    "metrics": "chaoskit.cli.metrics:metrics",
    "measure": "chaoskit.cli.measure:measure",
    "install": "chaoskit.cli.install:install",
    "uninstall": "chaoskit.cli.install:uninstall",
    "agent": "chaoskit.cli.agent:agent",
    "completion": "chaoskit.cli.complete:completion",
    "checks": "chaoskit.cli.catalog_lists:checks",
    "measurements": "chaoskit.cli.catalog_lists:measurements",
    "runs": "chaoskit.cli.runs:runs",
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported by name, on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, _, attr = COMMANDS[cmd_name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="chaoskit")
@click.option("--kubeconfig", envvar="KUBECONFIG", help="Kubeconfig file (default: $KUBECONFIG or ~/.kube/config).")
@click.option(
    "--context",
    help="Kubeconfig context (default: kind-<cluster> when a cluster is named, else the current context, as kubectl).",
)
@click.option("-n", "--namespace", help="Namespace for workloads chaoskit creates.")
@click.option(
    "--via",
    type=click.Choice(["auto", "docker", "agent"]),
    default="auto",
    envvar="CHAOSKIT_VIA",
    show_default=True,
    help="How chaoskit reaches the nodes: docker exec into kind's node containers on "
    "this host, or the node agents `chaoskit install` runs; auto picks docker where it can.",
)
@click.pass_context
def cli(ctx: click.Context, kubeconfig: str | None, context: str | None, namespace: str | None, via: str) -> None:
    """Break the real Kubernetes control plane on kind, measure and diagnose what happens."""
    ctx.obj = Globals(kubeconfig, context, namespace, via)


def main() -> None:
    """Entry point: maps chaoskit's errors to their exit codes with a one-paragraph message."""
    try:
        # without standalone mode click returns (not raises) the code of an Exit: pass it on
        sys.exit(cli.main(standalone_mode=False) or 0)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except ChaoskitError as exc:
        click.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
