"""`chaoskit validate` checks a step's node against the cluster's node names (a fake list here): an unknown one is a
problem at its `node` field; --offline, or the playbook's own cluster out of reach, skips the check and says so; a
cluster named on the command line must answer."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from playbook_catalog import MINIMAL, make_catalog

from chaoskit.cli import Globals
from chaoskit.cli.playbook import Catalog, validate
from chaoskit.errors import EXIT_INVALID_PLAYBOOK, EXIT_OK, ToolError, UsageError
from chaoskit.seams.kube import KubeError

NODES = ["chaoskit-control-plane", "chaoskit-worker", "chaoskit-worker2"]
KUBECONFIG = """\
apiVersion: v1
kind: Config
current-context: kind-chaoskit
clusters:
  - {name: kind-chaoskit, cluster: {server: "https://127.0.0.1:6443"}}
  - {name: kind-other, cluster: {server: "https://127.0.0.1:6444"}}
contexts:
  - {name: kind-chaoskit, context: {cluster: kind-chaoskit}}
  - {name: kind-other, context: {cluster: kind-other}}
"""


def _playbook(tmp_path: Path, node: str) -> Path:
    path = tmp_path / "pb.yaml"
    path.write_text(MINIMAL + f"      target:\n        node: {node}\n")  # line 10, the value at column 15
    return path


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The contexts whose nodes were listed; the kubeconfig holds kind-chaoskit and kind-other."""
    contexts: list[str] = []

    def nodes(_kubeconfig: str | None, context: str) -> list[str]:
        contexts.append(context)
        if context == "kind-other":
            raise KubeError("GET /api/v1/nodes: connection refused")
        return NODES

    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    monkeypatch.setattr("chaoskit.cli.playbook.cluster_nodes", nodes)
    return contexts


def _run(*args: str, context: str | None = None) -> tuple[int, str, str, BaseException | None]:
    """validate under the global options (--context) with the test's catalog, each found by type."""

    @click.group()
    @click.pass_context
    def root(ctx: click.Context) -> None:
        ctx.obj = Globals(kubeconfig=None, context=context, namespace=None)

    @root.group()
    @click.pass_context
    def catalog(ctx: click.Context) -> None:
        ctx.obj = Catalog(**make_catalog())

    catalog.add_command(validate)
    result = CliRunner().invoke(root, ["catalog", "validate", *args])
    return result.exit_code, result.stdout, result.stderr, result.exception


def test_an_unknown_node_is_a_problem_at_its_node_field(tmp_path: Path, asked: list[str]) -> None:
    code, out, err, _ = _run(str(_playbook(tmp_path, "chaoskit-wroker")))
    assert (code, out) == (EXIT_INVALID_PLAYBOOK, "")
    assert err == (
        f"{tmp_path}/pb.yaml:10:15: spec.steps[0].target.node: no node 'chaoskit-wroker' in kind-chaoskit; "
        "did you mean 'chaoskit-worker' or 'chaoskit-worker2' or 'chaoskit-control-plane'?\n"
    )
    assert asked == ["kind-chaoskit"]  # the playbook's own cluster (spec.cluster: chaoskit)


def test_a_node_of_the_cluster_is_ok(tmp_path: Path, asked: list[str]) -> None:
    path = _playbook(tmp_path, "chaoskit-worker2")
    assert _run(str(path))[:3] == (EXIT_OK, f"ok: {path}\n", "")


def test_with_no_close_name_the_problem_lists_the_nodes(tmp_path: Path, asked: list[str]) -> None:
    _, _, err, _ = _run(str(_playbook(tmp_path, "db-1")))
    assert err.endswith("no node 'db-1' in kind-chaoskit; its nodes: " + ", ".join(NODES) + "\n")


def test_roles_need_no_cluster(tmp_path: Path, asked: list[str]) -> None:
    assert _run(str(_playbook(tmp_path, "worker")))[0] == EXIT_OK
    assert asked == []


def test_offline_asks_no_cluster_and_says_the_nodes_went_unchecked(tmp_path: Path, asked: list[str]) -> None:
    path = _playbook(tmp_path, "chaoskit-wroker")
    assert _run("--offline", str(path))[:3] == (EXIT_OK, f"ok: {path}\n", f"{path}: nodes not checked (--offline)\n")
    assert asked == []


def test_the_playbooks_own_cluster_out_of_reach_skips_the_check_and_says_so(
    tmp_path: Path, asked: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _playbook(tmp_path, "chaoskit-wroker")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))  # no context kind-chaoskit
    code, _, err, _ = _run(str(path))
    assert code == EXIT_OK
    assert "nodes not checked: cluster kind-chaoskit not reachable" in err and "--offline" in err
    path.write_text(path.read_text().replace("spec:\n", "spec:\n  cluster: other\n"))  # there, but not answering
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    code, _, err, _ = _run(str(path))
    assert code == EXIT_OK and "cluster kind-other not reachable" in err


def test_a_cluster_named_on_the_command_line_is_asked_and_must_answer(tmp_path: Path, asked: list[str]) -> None:
    path = _playbook(tmp_path, "chaoskit-wroker")
    code, _, _, exc = _run("--cluster", "other", str(path))
    assert isinstance(exc, ToolError) and "cannot list the nodes of kind-other" in str(exc) and "--offline" in str(exc)
    _, _, _, exc = _run("--cluster", "missing", str(path))
    assert isinstance(exc, UsageError) and "no context kind-missing in the kubeconfig" in str(exc)


def test_the_global_context_names_the_cluster(tmp_path: Path, asked: list[str]) -> None:
    _, _, err, _ = _run(str(_playbook(tmp_path, "chaoskit-wroker")), context="kind-chaoskit")
    assert "in kind-chaoskit" in err and asked == ["kind-chaoskit"]
    _, _, _, exc = _run(str(_playbook(tmp_path, "chaoskit-wroker")), context="kind-other")
    assert isinstance(exc, ToolError)


def test_nodes_are_listed_once_per_cluster(tmp_path: Path, asked: list[str]) -> None:
    (tmp_path / "a").mkdir()
    for name in ("one", "two"):
        (tmp_path / "a" / f"{name}.yaml").write_text(MINIMAL + "      target:\n        node: chaoskit-worker\n")
    assert _run(str(tmp_path / "a"))[0] == EXIT_OK
    assert asked == ["kind-chaoskit"]


def test_json_output_carries_the_notes(tmp_path: Path, asked: list[str]) -> None:
    path = _playbook(tmp_path, "chaoskit-wroker")
    _, out, _, _ = _run("-o", "json", "--offline", str(path))
    assert json.loads(out)["notes"] == [f"{path}: nodes not checked (--offline)"]
