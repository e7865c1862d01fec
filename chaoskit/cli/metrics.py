"""`chaoskit metrics serve | textfile | prometheus up|down|status|query`: run journals as Prometheus metrics.

`chaoskit run` writes its journal where --journal says (default: the working directory); `serve` watches one
directory of journals, by default ~/.local/state/chaoskit/journals, so point --journal there to see runs live.
"""

from __future__ import annotations

import json
import re
import threading
import time
from datetime import datetime
from pathlib import Path

import click

from chaoskit.cli import Globals
from chaoskit.cli.listing import Column, Listing, listing_output_option, render
from chaoskit.cli.options import aliased, cluster_option, context_of
from chaoskit.cluster import prometheus as prom
from chaoskit.cluster.cache import Cache, default_root
from chaoskit.engine import sigterm_as_interrupt
from chaoskit.errors import UsageError
from chaoskit.exporters.prometheus import Exporter, JournalDir
from chaoskit.exporters.prometheus import serve as serve_exporter
from chaoskit.figures import seconds
from chaoskit.journal import default_journal_dir
from chaoskit.progress import Progress
from chaoskit.seams.kube import Kube
from chaoskit.seams.shell import SubprocessRunner


def default_prometheus_dir() -> Path:
    return prom.default_dir()


@click.group()
def metrics() -> None:
    """Export run journals as Prometheus metrics; run a real Prometheus beside the cluster."""


@metrics.command()
@click.option("--port", default=9464, show_default=True, help="Port of /metrics.")
@click.option("--address", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option(
    "--journals",
    "journal_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=default_journal_dir,
    show_default="~/.local/state/chaoskit/journals",
    help="Directory of run journals (*.jsonl), re-read when one is added or changes.",
)
@click.option("--interval", default=5.0, show_default=True, help="Seconds between looks at the directory.")
def serve(port: int, address: str, journal_dir: Path, interval: float) -> None:
    """Serve /metrics for every journal in a directory until interrupted."""
    progress = Progress()
    exporter = Exporter()
    watcher = JournalDir(exporter, journal_dir, say=progress.info)
    if not journal_dir.is_dir():
        progress.info(f"[yellow]note[/yellow]: {journal_dir} does not exist yet; serving empty metrics until it does")
    try:
        server, _ = serve_exporter(exporter, port, address)
    except OSError as exc:
        raise UsageError(f"cannot listen on {address}:{port}: {exc}") from exc
    progress.info(f"serving http://{address}:{port}/metrics for the journals in {journal_dir}")
    stop = threading.Event()
    try:
        with sigterm_as_interrupt():
            watcher.watch(stop, interval)
    except KeyboardInterrupt:
        progress.info("stopped")
    finally:
        server.shutdown()


@metrics.command()
@click.argument("journals", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@aliased(
    "--output-file",
    "out",
    aliases=("--output",),  # the older name; -o is the output format on every command
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="File to write (atomically); node_exporter's textfile collector reads only *.prom.",
)
def textfile(journals: tuple[Path, ...], out: Path) -> None:
    """Write the metrics of some journals once, in the node_exporter textfile-collector format."""
    exporter = Exporter()
    for path in journals:
        exporter.observe_journal(path)
    exporter.write_textfile(out)
    click.echo(f"wrote {out} from {len(journals)} journal{'s' if len(journals) != 1 else ''}")


@metrics.group()
def prometheus() -> None:
    """A real Prometheus (Debian's binaries, no service) scraping the cluster and chaoskit's exporter."""


_STATE = click.option(
    "--state",
    "state_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=default_prometheus_dir,
    show_default="~/.local/state/chaoskit/prometheus",
    help="Config, data, log and pid file of the server.",
)


@prometheus.command()
@cluster_option()
@click.option("--port", default=9090, show_default=True, help="Port of Prometheus' web API.")
@click.option("--address", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--exporter",
    default="127.0.0.1:9464",
    show_default=True,
    help="host:port of `chaoskit metrics serve` to scrape; 'none' to skip it.",
)
@click.option(
    "--diagnosis",
    default=None,
    metavar="HOST:PORT",
    help="host:port of `chaoskit diagnose --serve` to scrape (its alerts need it); none unless given.",
)
@_STATE
@click.option(
    "--cache", "cache_dir", type=click.Path(path_type=Path), default=default_root, show_default="~/.cache/chaoskit"
)
@click.pass_obj
def up(
    g: Globals,
    cluster: str,
    port: int,
    address: str,
    exporter: str,
    diagnosis: str | None,
    state_dir: Path,
    cache_dir: Path,
) -> None:
    """Install (cached) and start Prometheus in the background; prints its URL."""
    if (running := prom.adopt(state_dir)) is not None:
        click.echo(running.url)
        Progress().info(f"already running (pid {running.pid}); `chaoskit metrics prometheus down` stops it")
        return
    progress = Progress()
    runner = SubprocessRunner()
    with progress.step("Prometheus binaries from Debian's prometheus package"):
        tools = prom.install(runner, Cache(cache_dir))
    progress.info(f"prometheus {tools.version}: {tools.prometheus}")
    kube = Kube.connect(g.kubeconfig, context_of(g, cluster))
    with progress.step(f"ServiceAccount {prom.NAMESPACE}/{prom.SERVICE_ACCOUNT} and scrape config"):
        config = prom.prepare(kube, state_dir, None if exporter == "none" else exporter, diagnosis=diagnosis)
    if not config.rule_files:
        progress.info(
            "[yellow]note[/yellow]: chaoskit has no recording rules file (deploy/prometheus/rules.yml); none loaded"
        )
    with progress.step(f"starting prometheus on {address}:{port}"):
        server = prom.start(tools, state_dir, port, address, detach=True)
        took = server.wait_ready()
    progress.info(f"ready after {seconds(took)}; log {server.log}; data {state_dir / 'data'}")
    click.echo(server.url)


@prometheus.command()
@_STATE
def down(state_dir: Path) -> None:
    """Stop the Prometheus `up` started (its data stays in the state directory)."""
    server = prom.adopt(state_dir)
    if server is None:
        click.echo("prometheus is not running; nothing to stop")
        return
    server.stop()
    click.echo(f"prometheus (pid {server.pid}) stopped")


TARGET_COLUMNS = (
    Column("job", "job"),
    Column("instance", "instance"),
    Column("health", "health"),
    Column("last scrape", "last_scrape"),
    Column("error", "error"),
    Column("scrape url", "scrape_url", wide=True),
)


@prometheus.command()
@_STATE
@listing_output_option
def status(state_dir: Path, output: str) -> None:
    """The server's URL and the health of every scrape target."""
    server = prom.adopt(state_dir)
    if server is None:
        click.echo("prometheus is not running")
        raise click.exceptions.Exit(1)
    rows = [
        {
            "name": f"{t['labels'].get('job', '')}/{t['labels'].get('instance', '')}",
            "job": t["labels"].get("job", ""),
            "instance": t["labels"].get("instance", ""),
            "health": t.get("health", ""),
            "last_scrape": _ago(t.get("lastScrape", "")),
            "error": t.get("lastError", ""),
            "scrape_url": t.get("scrapeUrl", ""),
        }
        for t in sorted(server.targets(), key=lambda t: (t["labels"].get("job", ""), t["labels"].get("instance", "")))
    ]
    listing = Listing("target", TARGET_COLUMNS, rows, whole={"url": server.url, "pid": server.pid, "items": rows})
    if output in ("table", "wide"):
        click.echo(f"{server.url} (pid {server.pid})")
    render(listing, output)


@prometheus.command()
@click.argument("expr")
@_STATE
def query(expr: str, state_dir: Path) -> None:
    """Evaluate a PromQL expression now; prints the result as JSON."""
    server = prom.adopt(state_dir)
    if server is None:
        raise UsageError("prometheus is not running; start it with `chaoskit metrics prometheus up`")
    click.echo(json.dumps(server.query(expr), indent=2))


def _ago(stamp: str) -> str:
    """'2.3s ago' from an RFC 3339 time as Prometheus writes it (nanoseconds; Python reads at most micro)."""
    if stamp.startswith("0001-"):  # Go's zero time: never scraped yet
        return "never"
    try:
        then = datetime.fromisoformat(re.sub(r"(\.\d{6})\d+", r"\1", stamp).replace("Z", "+00:00"))
    except ValueError:
        return stamp
    return f"{seconds(time.time() - then.timestamp())} ago"
