"""The metrics-scrape seam: "fetch this /metrics endpoint and parse it", from the host or from inside a node.

Components differ in how they can be reached: kube-proxy answers plain HTTP on the node IP, the kubelet,
scheduler and controller-manager want TLS and a credential, and some bind only 127.0.0.1 of their node. So one
`Scraper` protocol with three implementations: `HttpScraper` (urllib from the host), `NodeScraper` (`curl` run on
a node through the NodeExec seam) and `FakeScraper` (recorded text, for unit tests). Parsing is always
prometheus_client's own text parser, so every scraper yields the same `Metric` families.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from chaoskit.cluster.nodeexec import NodeExec
from chaoskit.errors import CommandError, ToolError

__all__ = [
    "FakeScraper",
    "HttpScraper",
    "Metric",
    "NodeScraper",
    "ScrapeError",
    "Scraper",
    "parse",
    "samples",
    "total",
    "value",
]


class ScrapeError(ToolError):
    """An endpoint did not answer, answered an error, or answered something that is not Prometheus text."""


class Scraper(Protocol):
    def scrape(self, url: str) -> list[Metric]: ...


def parse(text: str, source: str = "metrics text") -> list[Metric]:
    """Prometheus text exposition format → metric families; ScrapeError names `source` when it is not valid."""
    try:
        return list(text_string_to_metric_families(text))
    except (ValueError, IndexError, KeyError) as exc:  # the parser raises all three on malformed lines
        raise ScrapeError(f"{source} is not valid Prometheus text: {exc}") from exc


@dataclass(frozen=True)
class HttpScraper:
    """Scrapes over HTTP(S) from this host with urllib; TLS verified against `ca_file` unless `insecure`."""

    timeout: float = 5.0
    ca_file: Path | None = None
    client_cert: Path | None = None  # PEM certificate, with its key in client_key (or in the same file)
    client_key: Path | None = None
    token: str | None = field(default=None, repr=False)  # bearer token; kept out of repr so it never gets logged
    insecure: bool = False  # components' self-signed serving certs (kubelet, scheduler) cannot be verified

    def scrape(self, url: str) -> list[Metric]:
        request = urllib.request.Request(url, headers={"Accept": "text/plain;version=0.0.4"})
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self._tls(url)) as resp:
                text = resp.read().decode("utf-8", errors="replace")
        except urllib.error.HTTPError as exc:
            body = exc.read().decode("utf-8", errors="replace")[:300]
            raise ScrapeError(f"GET {url}: HTTP {exc.code} {exc.reason}: {body}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise ScrapeError(f"GET {url}: {exc}") from exc
        return parse(text, url)

    def _tls(self, url: str) -> ssl.SSLContext | None:
        if not url.startswith("https://"):
            return None
        ctx = ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.client_cert is not None:
            ctx.load_cert_chain(str(self.client_cert), str(self.client_key) if self.client_key else None)
        return ctx


@dataclass(frozen=True)
class NodeScraper:
    """Scrapes from inside a node with `curl` (for endpoints bound to the node's 127.0.0.1 or only reachable there).

    Paths are the node's own files (e.g. /etc/kubernetes/pki/...). The bearer token is handed to curl on stdin
    (`-H @-`) so it never shows in the node's process list.
    """

    nodes: NodeExec
    node: str
    timeout: float = 5.0
    ca_file: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    token: str | None = field(default=None, repr=False)
    insecure: bool = False

    def argv(self, url: str) -> list[str]:
        argv = ["curl", "--silent", "--show-error", "--fail", "--max-time", f"{self.timeout:g}"]
        if self.insecure:
            argv.append("--insecure")
        elif self.ca_file:
            argv += ["--cacert", self.ca_file]
        if self.client_cert:
            argv += ["--cert", self.client_cert]
        if self.client_key:
            argv += ["--key", self.client_key]
        if self.token:
            argv += ["--header", "@-"]
        return [*argv, url]

    def scrape(self, url: str) -> list[Metric]:
        header = f"Authorization: Bearer {self.token}\n".encode() if self.token else None
        try:
            done = self.nodes.run(self.node, self.argv(url), input=header, timeout=self.timeout + 10)
        except CommandError as exc:
            tail = exc.output.strip().splitlines()[-1:] or ["no output"]
            raise ScrapeError(f"GET {url} on node {self.node}: curl exit {exc.returncode}: {tail[0]}") from exc
        return parse(done.stdout, f"{url} on node {self.node}")


@dataclass
class FakeScraper:
    """Answers from recorded text per URL; an unknown URL fails like an unreachable endpoint. Records each URL."""

    texts: dict[str, str] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    @classmethod
    def from_files(cls, files: dict[str, Path]) -> FakeScraper:
        return cls({url: path.read_text(encoding="utf-8") for url, path in files.items()})

    def scrape(self, url: str) -> list[Metric]:
        self.calls.append(url)
        if url not in self.texts:
            raise ScrapeError(f"GET {url}: connection refused (FakeScraper has no text for it)")
        return parse(self.texts[url], url)


def samples(families: Iterable[Metric], name: str, **labels: str) -> list[Sample]:
    """Samples named `name` (the sample's own name: `x_total`, `x_bucket`, `x_count`) whose labels include `labels`."""
    wanted = labels.items()
    return [s for f in families for s in f.samples if s.name == name and wanted <= s.labels.items()]


def value(families: Sequence[Metric], name: str, **labels: str) -> float | None:
    """The one sample named `name` with these labels; None when there is none.

    More than one match is a question asked too loosely (a value would be picked at random): ScrapeError says which
    labels tell them apart.
    """
    found = samples(families, name, **labels)
    if len(found) > 1:
        keys = sorted({k for s in found for k in s.labels} - labels.keys())
        raise ScrapeError(f"{len(found)} samples of {name} match {labels or '{}'}; narrow by {', '.join(keys)}")
    return found[0].value if found else None


def total(families: Sequence[Metric], name: str, **labels: str) -> float | None:
    """Sum of every sample named `name` with these labels (e.g. across ip_family); None when there is none."""
    found = samples(families, name, **labels)
    return sum(s.value for s in found) if found else None
