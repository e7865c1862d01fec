"""`chaoskit completion bash|zsh|fish`: the shell's completion script, and what completes a fault or a component.

Click completes through the program itself: the script the shell sources calls `chaoskit` again with
`_CHAOSKIT_COMPLETE` set, and the arguments below answer from the catalog.
"""

from __future__ import annotations

import click
from click.shell_completion import CompletionItem, get_completion_class

SHELLS = ("bash", "zsh", "fish")


def _matching(names: list[str], incomplete: str) -> list[CompletionItem]:
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def complete_fault(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Fault names starting with what was typed (`scheduler.` → the scheduler's faults)."""
    from chaoskit.registry import FAULTS, load_catalog  # the catalog loads only when a fault is being completed

    load_catalog()
    return _matching(FAULTS.names(), incomplete)


def complete_component(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Component names `chaoskit diagnose` judges, starting with what was typed."""
    from chaoskit.diagnosers.run import components  # the diagnosers load only when a component is being completed

    return _matching(components(), incomplete)


ROLES = ["control-plane", "worker"]  # what --node takes beside a name
ASK_S = 2.0  # a completion waits this long for the API server at most: a shell must not hang on a cluster down


def complete_node(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Node roles, and the names of the nodes of the cluster --context (or the current context) names; the roles
    alone when it does not answer in ASK_S."""
    from chaoskit.seams.kube import Kube  # the client loads only when a node is being completed

    root = ctx.find_root().params
    names = list(ROLES)
    try:
        kube = Kube.connect(root.get("kubeconfig"), root.get("context"))
        kube.timeout = (ASK_S, ASK_S)  # connect, read
        names += [n["metadata"]["name"] for n in kube.get("/api/v1/nodes")["items"]]
    except Exception:  # no kubeconfig, no answer: a completion offers what it has, never an error
        pass
    return _matching(names, incomplete)


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell's completion script: fault names complete after `inject` and `faults describe`, components
    after `diagnose`, node names (and roles) after --node, from the cluster of the current context.

    \b
    bash:  eval "$(chaoskit completion bash)"        (in ~/.bashrc)
    zsh:   eval "$(chaoskit completion zsh)"         (in ~/.zshrc)
    fish:  chaoskit completion fish > ~/.config/fish/completions/chaoskit.fish
    """
    cls = get_completion_class(shell)
    assert cls is not None  # every shell in SHELLS is one Click ships
    # the script calls the `chaoskit` entry point back, which Click's main reads as _CHAOSKIT_COMPLETE
    click.echo(cls(ctx.find_root().command, {}, "chaoskit", "_CHAOSKIT_COMPLETE").source())
