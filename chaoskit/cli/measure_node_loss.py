"""`chaoskit measure node-loss`: a worker cut off from the API server (node.partitioned) while chaoskit's workload runs
on it, and its loss timed stage by stage; the same run as playbooks/node-partitioned.yaml, built here."""

from __future__ import annotations

import time
import uuid

import click

from chaoskit.cli import Globals
from chaoskit.cli.complete import complete_node
from chaoskit.cli.options import cluster_env, cluster_option, emit, output_option, stdout_console
from chaoskit.cli.stages import print_stages
from chaoskit.components.node_lifecycle import DEFAULT_GRACE
from chaoskit.engine import sigterm_as_interrupt
from chaoskit.env import Env
from chaoskit.events import speaking
from chaoskit.journal import Journal, default_journal_dir
from chaoskit.measurements.node_loss import grace_period_of
from chaoskit.measurements.node_loss_tracker import TYPE
from chaoskit.model.moments import stamped_name
from chaoskit.model.playbook import Playbook
from chaoskit.model.record import RunRecord
from chaoskit.model.timeline import NODE_LOSS_STAGES
from chaoskit.progress import Progress
from chaoskit.registry import load_catalog
from chaoskit.run.plan import plan
from chaoskit.runner import Runner
from chaoskit.safety import recognise
from chaoskit.seams.shell import SubprocessRunner

MARGIN = 25.0  # past the grace period and the toleration: the node controller's 5 s look, the replacement's start


def playbook(namespace: str, node: str, toleration: int, hold: float) -> Playbook:
    """The node-loss run as a playbook: two web pods (one per worker), the partition held until the pod on the lost
    node is evicted and back elsewhere, the measurement around it."""
    return Playbook.model_validate(
        {
            "apiVersion": "chaoskit.dev/v1alpha1",
            "kind": "Playbook",
            "metadata": {"name": "node-loss", "description": f"{node} cut off from the API server"},
            "spec": {
                "namespace": namespace,
                "workload": {
                    "replicas": 2,
                    "hpa": {"minReplicas": 2, "maxReplicas": 2},
                    "load": {"concurrency": 0},
                    "tolerationSeconds": toleration,
                },
                "steadyState": [{"check": "cluster-healthy", "timeout": "180s"}],
                "steps": [
                    {
                        "fault": "node.partitioned",
                        "target": {"node": node},
                        "duration": f"{hold:.0f}s",
                        "deadline": f"{hold + 120:.0f}s",
                    }
                ],
                "measurements": [{"name": "node-loss", "type": TYPE}],
            },
        }
    )


def drive(env: Env, node: str, toleration: int, namespace: str) -> RunRecord:
    load_catalog()
    grace = grace_period_of(env.kube) or DEFAULT_GRACE
    pb = playbook(namespace, node, toleration, grace + toleration + MARGIN)
    nodes = env.nodes.list_nodes()
    journal = Journal(default_journal_dir() / stamped_name("node-loss", time.time(), ".jsonl"))
    return Runner(env, nodes, journal, speaking(Progress().info, playbook=False)).run(plan(pb, nodes))


@click.command("node-loss")
@click.option(
    "--node",
    shell_complete=complete_node,
    default="worker",
    show_default=True,
    help="The worker to cut off: a name or a role.",
)
@click.option(
    "--toleration",
    type=click.IntRange(0, 3600),
    default=10,
    show_default=True,
    help="Seconds the web pods tolerate a lost node (the stock 300 takes over five minutes).",
)
@click.option("--allow-any-cluster", is_flag=True, help="Inject into a cluster chaoskit did not build or install.")
@cluster_option()
@output_option()
@click.pass_obj
def node_loss(g: Globals, node: str, toleration: int, allow_any_cluster: bool, cluster: str, output: str) -> None:
    """Cut a worker off from the API server (node.partitioned) and time its loss: last heartbeat → NotReady → tainted
    unreachable → each pod evicted at its toleration → replacement created → scheduled → Ready → in the
    EndpointSlice → in every other node's rules. Says which stages are settings (the node-monitor grace period, the
    toleration) and which are work, beside the stock budget. The workload lives in a namespace of its own, deleted at
    the end, and the partition is reverted (the node's dead-man switch heals it even if chaoskit dies).

    Exit codes: 0 measured, 1 the run deviated (the node did not heal), 4 tool error, 130 interrupted.
    """
    ns = g.namespace or f"chaoskit-node-loss-{uuid.uuid4().hex[:6]}"
    env = cluster_env(g, cluster)
    if not allow_any_cluster:
        recognise(SubprocessRunner(), env.kube, cluster)
    with sigterm_as_interrupt():
        record = drive(env, node, toleration, ns)
    if output != "table":
        emit(record.to_dict(), output)
    else:
        for m in record.measurements:
            print_stages(m, stdout_console(110), NODE_LOSS_STAGES, "node loss")
    raise click.exceptions.Exit(record.exit_code)
