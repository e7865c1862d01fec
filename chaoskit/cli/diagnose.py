"""`chaoskit diagnose [COMPONENT...]`: what is wrong with each control-plane component and node, and why.

Exit codes: 0 nothing judged wrong · 1 any component degraded or failed (a finding at warning or critical level, an
unexplained symptom among them) · 2 usage · 4 the diagnosis itself could not run (no cluster, no Docker), or no
component could be judged.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from chaoskit.cli import Globals
from chaoskit.cli.complete import complete_component
from chaoskit.cli.diagnose_serve import refuse as refuse_serve
from chaoskit.cli.diagnose_serve import serve_diagnoses, serve_options
from chaoskit.cli.diagnose_watch import count_option, watch_diagnoses, watch_option
from chaoskit.cli.options import cluster_env, cluster_option, file_option, output_option
from chaoskit.diagnosers.kit.managed import control_plane_of
from chaoskit.diagnosers.run import BUDGET
from chaoskit.diagnosers.run import diagnose as run_diagnosis
from chaoskit.env import Env
from chaoskit.errors import UsageError
from chaoskit.progress import Progress
from chaoskit.reports import FORMATS, render

if TYPE_CHECKING:  # the playbook models load only for --subject or --record: a plain look starts 0.1 s sooner
    from chaoskit.model.record import RunRecord
    from chaoskit.subject import Subject


@click.command()
@click.argument("components", nargs=-1, metavar="[COMPONENT]...", shell_complete=complete_component)
@output_option(FORMATS, help="Report format.", dest="fmt", aliases=("--format",))  # --format: the older name
@file_option(
    "--output-file",
    "output_file",
    "Write the report to FILE instead of stdout (html and junit are meant for files).",
)
@file_option(
    "--html",
    "html_file",
    "Also write the same diagnosis as one self-contained HTML page to FILE.",
)
@file_option(
    "--junit",
    "junit_file",
    "Also write the same diagnosis as JUnit XML to FILE (a test case per check).",
)
@cluster_option()
@click.option(
    "--record",
    "record_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A run record (chaoskit run -o json, or its journal) to report with: steps, measurements, "
    "the HPA timeline as SVG.",
)
@click.option(
    "--budget",
    type=click.FloatRange(min=3),
    default=BUDGET,
    show_default=True,
    help="Seconds for collecting the evidence: whatever hangs longer (a frozen API server or etcd) is "
    "reported as unanswered.",
)
@click.option(
    "--subject",
    "subject_ref",
    metavar="NAMESPACE/NAME",
    help="Also judge your Deployment (its HPA and Service found as a playbook's subject finds them): its "
    "conditions, its HPA's, its Service's endpoints, its PodDisruptionBudgets.",
)
@watch_option
@count_option
@serve_options
@click.pass_obj
def diagnose(
    g: Globals,
    components: tuple[str, ...],
    fmt: str,
    output_file: Path | None,
    html_file: Path | None,
    junit_file: Path | None,
    cluster: str,
    record_path: Path | None,
    budget: float,
    subject_ref: str | None,
    watch_s: float | None,
    count: int | None,
    serve_addr: str | None,
    interval_s: float | None,
) -> None:
    """Diagnose the control plane and every node: findings with probable cause, evidence and remediation.

    COMPONENT is any of apiserver, etcd, scheduler, controller-manager, kubelet, kube-proxy, containerd,
    metrics-server (the resource metrics pipeline), dns (cluster DNS: a real lookup from every node, CoreDNS and its
    Corefile), workloads (the cluster's symptoms: pods, Deployments, Services,
    HPAs, node conditions, each given to the finding that explains it or reported as unexplained), reverts
    (chaoskit's own dead-man switches: one that gave up or is retrying) (default: all). Works when the API server
    is down: the API server's report then fails on node-local evidence, and the others say which API-side
    evidence was unavailable.

    Exit codes: 0 when nothing was judged wrong (a component whose evidence could not be collected is "unknown"
    and said, not failed); 1 when any is degraded or failed, a symptom nobody explains among them (so a CI gate fails
    on warnings too); 2 usage; 4 the diagnosis could not run, or judged nothing. --html and --junit write the same
    diagnosis again, so a CI job keeps one moment's picture in every format.
    """
    alone = {"--watch": watch_s, "--count": count, "--output-file": output_file, "--html": html_file}
    where = refuse_serve(serve_addr, interval_s, {**alone, "--junit": junit_file, "--record": record_path})
    env = cluster_env(g, cluster, lazy=True)  # the client loads while the node scripts run
    nodes = env.nodes.list_nodes()  # listed once (docker ps, or the install's agents)
    if not nodes:
        raise UsageError(f"no kind cluster named {cluster!r} and no chaoskit agents there (chaoskit cluster up)")
    record = _record(record_path) if record_path else None
    progress = Progress()
    control_plane, out_of_reach = control_plane_of(env.kube, nodes)
    if out_of_reach:
        progress.info(f"no chaoskit agent on the control plane ({control_plane}): judged from what the API shows")
    yours = _subject(env, subject_ref) if subject_ref else None
    names = [n.name for n in nodes]
    look = partial(
        run_diagnosis, env, control_plane, names, components, budget=budget, subject=yours, out_of_reach=out_of_reach
    )
    if where is not None:  # a Prometheus target: the last look's series, looked at again every --interval
        serve_diagnoses(look, where, interval_s, progress.info)
        return
    if watch_s is not None or count is not None:  # a look every few seconds, printing only what changed
        code = watch_diagnoses(
            look,
            watch_s,
            count,
            fmt,
            {"--output-file": output_file, "--html": html_file, "--junit": junit_file, "--record": record_path},
        )
        raise click.exceptions.Exit(code)
    result = look(say=progress.info)
    for extra, path in (("html", html_file), ("junit", junit_file)):
        if path is not None:
            path.write_text(render(result, extra, record))
            progress.info(f"{extra} report written to {path}")
    if output_file is not None:
        output_file.write_text(render(result, fmt, record))
        progress.info(f"{fmt} report written to {output_file}")
    elif fmt == "table" and sys.stdout.isatty():
        from rich.console import Console

        from chaoskit.reports.table import renderables

        Console(highlight=False).print(renderables(result, record))
    else:
        click.echo(render(result, fmt, record), nl=False)
    if result.exit_code:
        raise click.exceptions.Exit(result.exit_code)


def _subject(env: Env, ref: str) -> Subject:
    from chaoskit.model.playbook import Subject as SubjectSpec
    from chaoskit.subject import resolve

    namespace, _, name = ref.partition("/")
    if not namespace or not name:
        raise UsageError(f"--subject {ref!r}: give NAMESPACE/NAME of your Deployment")
    return resolve(env.kube, SubjectSpec(namespace=namespace, deployment=name))


def _record(path: Path) -> RunRecord:
    """A run record: the JSON `chaoskit run -o json` prints, or the run-finished entry of a journal."""
    from chaoskit.model.record import RunRecord

    text = path.read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    if data is None or (isinstance(data, dict) and {"kind", "data"} <= data.keys()):  # a journal, of one line or more
        finished = [json.loads(line) for line in text.splitlines() if '"run-finished"' in line]
        data = (finished[-1].get("data") or {}).get("record") if finished else None
    if not isinstance(data, dict):
        raise UsageError(f"{path} holds no run record")
    try:
        return RunRecord.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{path}: an unreadable run record: {exc}") from exc
