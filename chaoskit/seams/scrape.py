"""The metrics-scrape seam: "fetch this /metrics endpoint and parse it", from the host or from inside a node, and
the one reading of what came back.

Components differ in how they can be reached: kube-proxy answers plain HTTP on the node IP, the kubelet,
scheduler and controller-manager want TLS and a credential, and some bind only 127.0.0.1 of their node. So one
`Scraper` protocol with three implementations: `HttpScraper` (urllib from the host), `NodeScraper` (`curl` run on
a node through the NodeExec seam) and `FakeScraper` (recorded text, for unit tests); `scrape_command` is the same
fetch as one shell line, for node scripts that read several things at once. Parsing is always prometheus_client's
own text parser (`parse`), so every path yields the same `Metric` families, and `Metrics` answers questions about
them: samples by labels, sums, histograms, a window between two scrapes, quantiles computed the way PromQL's
histogram_quantile does.
"""

# Over 300 lines: the scrape seam with its fake and the one reader of Prometheus text: seams stay whole.

from __future__ import annotations

import math
import re
import shlex
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from chaoskit.errors import CommandError, ToolError
from chaoskit.seams.certs import KUBELET_CLIENT_CERT, KUBELET_CLIENT_KEY
from chaoskit.seams.nodeexec import Node, NodeExec
from chaoskit.seams.shell import Asks

__all__ = [
    "FakeScraper",
    "Histogram",
    "HttpScraper",
    "Labels",
    "Metric",
    "Metrics",
    "NodeScraper",
    "Sample",
    "ScrapeError",
    "Scraper",
    "counter_delta",
    "parse",
    "scrape_command",
    "windowed",
]


class ScrapeError(ToolError):
    """An endpoint did not answer, answered an error (`status`: its HTTP status), or answered something that is not
    Prometheus text."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


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
            raise ScrapeError(f"GET {url}: HTTP {exc.code} {exc.reason}: {body}", exc.code) from exc
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
    node: Node
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
            raise ScrapeError(f"GET {url} on node {self.node.name}: curl exit {exc.returncode}: {tail[0]}") from exc
        return parse(done.stdout, f"{url} on node {self.node.name}")


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


def scrape_command(
    url: str,
    names: Sequence[str],
    *,
    client_cert: bool = False,
    max_time: float = 3,  # a local component answers in milliseconds; a frozen one costs this much
    keep: Mapping[str, Sequence[str]] | None = None,
) -> Asks:
    """A shell line printing only the wanted metric families (and their TYPE lines) of `url`; fails if curl does.

    `client_cert` presents kubeadm's apiserver-kubelet-client certificate, which every component's delegated
    authn/authz accepts. `keep` maps a family to the only labels wanted of it: its samples are summed over the
    others on the node (the API server's latency histograms shrink from thousands of lines to a few hundred).
    """
    cert = f"--cert {KUBELET_CLIENT_CERT} --key {KUBELET_CLIENT_KEY} " if client_cert else ""
    families = f"^(# TYPE )?({'|'.join(names)})"
    line = f"m=$(curl -sSkf {cert}--max-time {max_time:g} {shlex.quote(url)}) || exit $?; "
    line += f"printf '%s\\n' \"$m\" | grep -E {shlex.quote(families)}"
    for family, labels in (keep or {}).items():
        line += f" | {_sum_over_command(family, labels)}"
    return Asks(line + " || true", url=url, families=families)


def _sum_over_command(family: str, keep: Sequence[str]) -> str:
    """awk summing `family`'s samples over every label but `keep` (values with `",` in them are not expected)."""
    program = (
        f"$0 ~ /^{family}(_bucket|_sum|_count)?\\{{/ {{"
        ' i = index($0, "{"); j = index($0, "} "); name = substr($0, 1, i - 1);'
        ' n = split(substr($0, i + 1, j - i - 1), parts, "\\",");'
        ' key = "";'
        ' for (k = 1; k <= n; k++) { p = parts[k] (k < n ? "\\"" : ""); e = index(p, "=");'
        '   if (index("," keep ",", "," substr(p, 1, e - 1) ",")) key = key (key == "" ? "" : ",") p }'
        ' sums[name "{" key "}"] += substr($0, j + 2); next }'
        " { print }"
        ' END { for (s in sums) printf "%s %.17g\\n", s, sums[s] }'
    )
    return f"awk -v keep={shlex.quote(','.join(keep))} {shlex.quote(program)}"


Labels = Mapping[str, str]


@dataclass(frozen=True)
class Sample:
    name: str  # the sample's own name: `x_total`, `x_bucket`, `x_count`
    labels: Labels
    value: float


@dataclass(frozen=True)
class Histogram:
    buckets: tuple[tuple[float, float], ...]  # (upper bound, cumulative count), ascending, +Inf last
    count: float
    sum: float

    def minus(self, earlier: Histogram) -> Histogram:
        """The observations made between `earlier` and this scrape (a counter reset gives this one whole)."""
        if self.count < earlier.count:
            return self
        before = dict(earlier.buckets)
        return Histogram(
            tuple((le, c - before.get(le, 0.0)) for le, c in self.buckets),
            self.count - earlier.count,
            self.sum - earlier.sum,
        )

    def quantile(self, q: float) -> float | None:
        """histogram_quantile(q): linear within the bucket; the highest finite bound if it falls in +Inf."""
        if self.count <= 0 or not self.buckets:
            return None
        rank = q * self.buckets[-1][1]
        lower_bound, lower_count = 0.0, 0.0
        for le, c in self.buckets:
            if c >= rank:
                if math.isinf(le):
                    return lower_bound
                if c == lower_count:
                    return le
                return lower_bound + (le - lower_bound) * (rank - lower_count) / (c - lower_count)
            lower_bound, lower_count = le, c
        return lower_bound

    def over(self, limit: float) -> float:
        """Observations certainly slower than `limit`: those above the highest bucket bound at or below it."""
        within = max((c for le, c in self.buckets if le <= limit), default=0.0)
        return self.count - within

    def slow(self, limit: float, at_least: int) -> bool:
        """p99 above `limit`, by at least `at_least` observations over it: in a short window p99 is nearly the
        maximum, and one slow observation is a bad second, not a slow component."""
        p99 = self.quantile(0.99)
        return p99 is not None and p99 > limit and self.over(limit) >= at_least

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count > 0 else None


_SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+-?\d+)?[ \t]*")
_LABEL = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"[ \t]*(?:,|$)')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


def _plain_samples(text: str) -> tuple[Sample, ...] | None:
    """The samples of plain exposition text, about 20 times faster than prometheus_client's parser (the API
    server's histograms run to thousands of lines a scrape); None for anything unusual, which that parser takes."""
    out = []
    counters = set()  # counter families not named *_total: their samples are read as <name>_total, as that parser does
    for line in text.splitlines():
        if not line or line.startswith("#"):
            words = line.split()
            if len(words) == 4 and words[1] == "TYPE" and words[3] == "counter" and not words[2].endswith("_total"):
                counters.add(words[2])
            continue
        m = _SAMPLE.fullmatch(line)
        if m is None:
            return None
        name, body, value = m.groups()
        name = f"{name}_total" if name in counters else name
        labels: dict[str, str] = {}
        if body:
            pos = 0
            for lm in _LABEL.finditer(body):
                if lm.start() != pos:
                    return None
                v = lm.group(2)
                labels[lm.group(1)] = re.sub(r"\\[\\\"n]", lambda e: _UNESCAPE[e.group(0)], v) if "\\" in v else v
                pos = lm.end()
            if pos != len(body):
                return None
        try:
            out.append(Sample(name, labels, float(value)))
        except ValueError:
            return None
    return tuple(out)


def _matches(labels: Labels, match: Mapping[str, str], where: Callable[[Labels], bool] | None) -> bool:
    return all(labels.get(k) == v for k, v in match.items()) and (where is None or where(labels))


@dataclass(frozen=True)
class Metrics:
    """The samples of one scrape; empty with an `error` when the scrape failed (a reason, not an exception)."""

    samples: tuple[Sample, ...]
    error: str = ""  # the text could not be fetched or parsed

    @classmethod
    def of(cls, families: Iterable[Metric]) -> Metrics:
        return cls(tuple(Sample(s.name, dict(s.labels), float(s.value)) for f in families for s in f.samples))

    @classmethod
    def parse(cls, text: str, source: str = "metrics text") -> Metrics:
        """`text` parsed; malformed text gives no samples and the parser's complaint as the error."""
        fast = _plain_samples(text)
        if fast is not None:
            return cls(fast)
        try:
            return cls.of(parse(text, source))
        except ScrapeError as exc:
            return cls((), str(exc))

    @classmethod
    def unavailable(cls, error: str) -> Metrics:
        return cls((), error or "no metrics")

    def __bool__(self) -> bool:
        return bool(self.samples)

    def select(self, name: str, where: Callable[[Labels], bool] | None = None, **match: str) -> list[Sample]:
        """Samples named `name` whose labels include `match` (and pass `where`)."""
        return [s for s in self.samples if s.name == name and _matches(s.labels, match, where)]

    def value(self, name: str, **match: str) -> float | None:
        """The one sample named `name` with these labels; None when there is none.

        More than one match is a question asked too loosely (a value would be picked at random): ScrapeError says
        which labels tell them apart.
        """
        found = self.select(name, None, **match)
        if len(found) > 1:
            keys = sorted({k for s in found for k in s.labels} - match.keys())
            raise ScrapeError(f"{len(found)} samples of {name} match {match or '{}'}; narrow by {', '.join(keys)}")
        return found[0].value if found else None

    def total(self, name: str, where: Callable[[Labels], bool] | None = None, **match: str) -> float | None:
        """Sum over the matching series (e.g. across ip_family); None when there is none (absent differs from 0)."""
        found = self.select(name, where, **match)
        return sum(s.value for s in found) if found else None

    def histogram(self, name: str, where: Callable[[Labels], bool] | None = None, **match: str) -> Histogram | None:
        """The matching series of a histogram summed into one (as `sum by (le)` would)."""
        buckets: dict[float, float] = {}
        for s in self.select(f"{name}_bucket", where, **match):
            le = float(s.labels.get("le", "+Inf"))
            buckets[le] = buckets.get(le, 0.0) + s.value
        if not buckets:
            return None
        count = self.total(f"{name}_count", where, **match) or 0.0
        total = self.total(f"{name}_sum", where, **match) or 0.0
        return Histogram(tuple(sorted(buckets.items())), count, total)

    def group(self, name: str, by: str, where: Callable[[Labels], bool] | None = None) -> dict[str, float]:
        """Sum of `name` per value of label `by`."""
        out: dict[str, float] = {}
        for s in self.select(name, where):
            key = s.labels.get(by, "")
            out[key] = out.get(key, 0.0) + s.value
        return out


def windowed(now: Histogram | None, before: Histogram | None, min_count: float = 1) -> tuple[Histogram | None, str]:
    """The histogram of the window between two scrapes when it saw at least `min_count` observations, else the
    cumulative one since the process started; the second value says which ("window" | "since start" | "")."""
    if now is None:
        return None, ""
    if before is not None:
        delta = now.minus(before)
        if delta.count >= min_count:
            return delta, "window"
    return now, "since start"


def counter_delta(now: float | None, before: float | None) -> float | None:
    if now is None:
        return None
    if before is None or now < before:  # no earlier scrape, or a restart reset the counter
        return now
    return now - before
