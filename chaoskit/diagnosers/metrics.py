"""Prometheus text from the components' /metrics, fetched inside a node and parsed with prometheus_client.

The fetch is a shell line for a node script (until chaoskit.cluster.scrape lands, which this is meant to give way
to); everything else here is pure: samples, sums, histograms, a window between two scrapes, quantiles computed the
way PromQL's histogram_quantile does.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

# kubeadm's cluster-admin client certificate for the kubelets: every component's delegated authn/authz accepts it
CLIENT_CERT = "/etc/kubernetes/pki/apiserver-kubelet-client.crt"
CLIENT_KEY = "/etc/kubernetes/pki/apiserver-kubelet-client.key"

Labels = Mapping[str, str]


def scrape_command(url: str, names: Sequence[str], *, client_cert: bool = False, max_time: float = 10) -> str:
    """A shell line printing only the wanted metric families (and their TYPE lines) of `url`; fails if curl does."""
    cert = f"--cert {CLIENT_CERT} --key {CLIENT_KEY} " if client_cert else ""
    wanted = shlex.quote(f"^(# TYPE )?({'|'.join(names)})")
    return (
        f"m=$(curl -sSkf {cert}--max-time {max_time:g} {shlex.quote(url)}) || exit $?; "
        f"printf '%s\\n' \"$m\" | grep -E {wanted} || true"
    )


@dataclass(frozen=True)
class Sample:
    name: str
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

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count > 0 else None


def _matches(labels: Labels, match: Mapping[str, str], where: Callable[[Labels], bool] | None) -> bool:
    return all(labels.get(k) == v for k, v in match.items()) and (where is None or where(labels))


@dataclass(frozen=True)
class Metrics:
    samples: tuple[Sample, ...]
    error: str = ""  # the text could not be fetched or parsed

    @classmethod
    def parse(cls, text: str) -> Metrics:
        try:
            families = list(text_string_to_metric_families(text))
        except ValueError as exc:
            return cls((), f"unparseable metrics: {exc}")
        return cls(tuple(Sample(s.name, dict(s.labels), float(s.value)) for f in families for s in f.samples))

    @classmethod
    def unavailable(cls, error: str) -> Metrics:
        return cls((), error or "no metrics")

    def __bool__(self) -> bool:
        return bool(self.samples)

    def select(self, name: str, where: Callable[[Labels], bool] | None = None, **match: str) -> list[Sample]:
        return [s for s in self.samples if s.name == name and _matches(s.labels, match, where)]

    def total(self, name: str, where: Callable[[Labels], bool] | None = None, **match: str) -> float | None:
        """Sum over the matching series; None when there is none (absent differs from zero)."""
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


def rounded(values: Iterable[tuple[str, float | None]], digits: int = 4) -> dict[str, float]:
    """Metric values for an Evidence record: absent ones left out, the rest rounded for reading."""
    return {k: round(v, digits) for k, v in values if v is not None}
