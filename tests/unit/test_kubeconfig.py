"""Which cluster a context names: read from the kubeconfig as kubectl reads it, and held against the kind cluster
whose nodes chaoskit would reach, so API calls and node commands never go to two clusters."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from chaoskit.cli import Globals, cli
from chaoskit.cli.options import cluster_option, context_of
from chaoskit.env import known_context, same_cluster
from chaoskit.errors import UsageError
from chaoskit.seams.kubeconfig import host_port, read_contexts, same_server
from chaoskit.seams.nodecontainers import NodeContainer

KUBECONFIG = """
apiVersion: v1
kind: Config
current-context: kind-chaoskit
contexts:
- name: kind-chaoskit
  context: {cluster: kind-chaoskit, user: kind-chaoskit}
- name: elsewhere
  context: {cluster: prod, user: me}
clusters:
- name: kind-chaoskit
  cluster: {server: "https://127.0.0.1:33159"}
- name: prod
  cluster: {server: "https://10.0.0.1:6443"}
"""
NODES = [NodeContainer("chaoskit-control-plane", "control-plane", "img", "running", "127.0.0.1:33159")]


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "config"
    path.write_text(KUBECONFIG)
    return str(path)


def test_contexts_and_their_servers_are_read_as_kubectl_reads_them(kubeconfig: str, tmp_path: Path) -> None:
    contexts = read_contexts(kubeconfig)
    assert contexts.current == "kind-chaoskit" and contexts.server("elsewhere") == "https://10.0.0.1:6443"
    assert contexts.server("nope") is None
    other = tmp_path / "other"
    other.write_text("contexts: [{name: elsewhere, context: {cluster: x}}]\nclusters: []\n")
    merged = read_contexts(f"{kubeconfig}:{other}")
    assert merged.server("elsewhere") == "https://10.0.0.1:6443", "the first file that names a context wins"


def test_a_server_is_a_kind_clusters_when_its_loopback_port_is_the_published_one() -> None:
    assert host_port("https://[::1]:6443") == ("::1", 6443) and host_port("https://example.com") == ("example.com", 443)
    assert same_server("https://localhost:33159", "127.0.0.1:33159")
    assert not same_server("https://127.0.0.1:6443", "127.0.0.1:33159")
    assert not same_server("https://10.0.0.1:33159", "127.0.0.1:33159")


def test_an_unknown_context_is_refused_before_anything_is_read(kubeconfig: str) -> None:
    with pytest.raises(UsageError, match="no context 'nope' in the kubeconfig \\(it has: elsewhere, kind-chaoskit\\)"):
        known_context(kubeconfig, "nope")
    known_context(kubeconfig, "elsewhere")


def test_a_context_that_is_not_the_kind_cluster_reached_is_refused(kubeconfig: str) -> None:
    same_cluster(kubeconfig, "kind-chaoskit", "chaoskit", NODES)
    with pytest.raises(UsageError, match="points at https://10.0.0.1:6443, but kind cluster 'chaoskit'"):
        same_cluster(kubeconfig, "elsewhere", "chaoskit", NODES)


@click.command()
@cluster_option()
@click.pass_obj
def _acts_on(g: Globals, cluster: str) -> None:
    click.echo(f"{cluster} {context_of(g, cluster)}")


@pytest.mark.parametrize(
    ("current", "before", "after", "said"),
    [
        ("kind-chaoskit", [], [], "chaoskit kind-chaoskit"),
        ("kind-other", [], [], "other kind-other"),  # the current context's kind cluster
        ("elsewhere", [], [], "chaoskit elsewhere"),  # no kind cluster's: its API server is then held against the nodes
        ("elsewhere", [], ["--cluster", "mine"], "mine kind-mine"),  # a cluster named: its own context
        ("elsewhere", ["--context", "kind-x"], [], "x kind-x"),  # a context named: its cluster
    ],
)
def test_the_cluster_acted_on_is_the_current_contexts_unless_one_is_named(
    kubeconfig: str, current: str, before: list[str], after: list[str], said: str
) -> None:
    Path(kubeconfig).write_text(KUBECONFIG.replace("current-context: kind-chaoskit", f"current-context: {current}"))
    cli.add_command(_acts_on, "acts-on")
    try:
        done = CliRunner().invoke(cli, ["--kubeconfig", kubeconfig, *before, "acts-on", *after])
    finally:
        cli.commands.pop("acts-on")
    assert done.exit_code == 0 and done.output.strip() == said, done.output
