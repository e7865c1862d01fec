"""`chaoskit agent serve | exec`: the node agent itself, and one command through it (what error messages paste)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from chaoskit.cli import Globals
from chaoskit.cli.options import node_exec


@click.group()
def agent() -> None:
    """chaoskit's node agent (what `chaoskit install` runs on every node)."""


@agent.command()
@click.option("--node", required=True, help="This node's name (the DaemonSet passes spec.nodeName).")
@click.option(
    "--tls-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="ca.crt, tls.crt and tls.key: the agents' server pair and the install's CA.",
)
@click.option("--port", type=int, default=None, help="Host port (default 10370).")
def serve(node: str, tls_dir: Path, port: int | None) -> None:
    """Serve node commands over mutual TLS until killed."""
    from chaoskit.agent.server import PORT, TLSFiles
    from chaoskit.agent.server import serve as run

    run(TLSFiles(tls_dir), node, port or PORT)


@agent.command("exec", context_settings={"ignore_unknown_options": True})
@click.option("--cluster", default="chaoskit", show_default=True)
@click.argument("node")
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_obj
def exec_(g: Globals, cluster: str, node: str, argv: tuple[str, ...]) -> None:
    """Run ARGV on NODE in the node's namespaces, through its agent (--via agent is implied)."""
    done = node_exec(Globals(g.kubeconfig, g.context, g.namespace, "agent"), cluster).run(node, argv, check=False)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    sys.exit(done.returncode)
