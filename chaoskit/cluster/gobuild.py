"""Go builds of every binary the cluster needs, from pinned Go modules, cached by what shapes them.

A target either builds packages of a module kept under images/ (with its own
go.mod/go.sum) or installs `path@version` straight from the module proxy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chaoskit.cluster import versions as v
from chaoskit.cluster.assets import images_dir
from chaoskit.cluster.cache import Cache, cache_key, tree_digest
from chaoskit.seams.shell import Runner

# what shapes compiled packages, which Go's build cache keys on: `go vet` and `go test` of our modules pass the same
COMPILE_ENV = {"CGO_ENABLED": "0"}
COMPILE_FLAGS = ("-trimpath",)


@dataclass(frozen=True)
class GoTarget:
    name: str
    packages: tuple[str, ...]
    outputs: tuple[str, ...]
    module: str | None = None  # folder under images/; None means go install path@version
    ldflags: tuple[str, ...] = ()
    # (main package, its -X flags) where a command is stamped apart from the rest; go build's last match wins
    package_ldflags: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def argv(self, out: Path) -> list[str]:
        flags = [*COMPILE_FLAGS, "-ldflags", " ".join(("-s", "-w", *self.ldflags))]
        for pkg, stamps in self.package_ldflags:
            flags += ["-ldflags", f"{pkg}=" + " ".join(("-s", "-w", *stamps))]
        if self.module is None:
            return ["go", "install", *flags, *self.packages]
        return ["go", "build", *flags, "-o", f"{out}/", *self.packages]


def _version_ldflags(pkg: str, version: str) -> tuple[str, ...]:
    major, minor_, *_ = version.lstrip("v").split(".")
    return (
        f"-X {pkg}.gitVersion={version}",
        f"-X {pkg}.gitMajor={major}",
        f"-X {pkg}.gitMinor={minor_}",
        f"-X {pkg}.gitCommit=0000000000000000000000000000000000000000",
        f"-X {pkg}.gitTreeState=clean",
        f"-X {pkg}.buildDate=2026-01-01T00:00:00Z",
    )


KUBE_COMMANDS = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kube-proxy",
    "kubeadm",
    "kubelet",
    "kubectl",
)

METRICS_SERVER_MAIN = "sigs.k8s.io/metrics-server/cmd/metrics-server"

# etcd and CoreDNS build in modules of their own, but every module they share with images/k8s is pinned at the
# version Kubernetes uses (grpc, protobuf, OpenTelemetry, Prometheus, golang.org/x/...): Go's build cache then hands
# them the packages the Kubernetes build compiled, and a cold build compiles those once. Only these keep their own:
OWN_VERSIONS: dict[str, tuple[str, ...]] = {
    # etcd's own client libraries at its release (Kubernetes 1.34.4's API server uses 3.6.4)
    "etcd": ("go.etcd.io/etcd/api/v3", "go.etcd.io/etcd/client/pkg/v3", "go.etcd.io/etcd/client/v3"),
    # CoreDNS 1.12.1 does not build against client-go 0.34 (cache.Config lost RetryOnError), so its Kubernetes
    # client libraries, and what those pin, stay where CoreDNS has them
    "coredns": (
        "github.com/coredns/caddy",
        "github.com/google/gnostic-models",
        "k8s.io/api",
        "k8s.io/apimachinery",
        "k8s.io/client-go",
        "k8s.io/kube-openapi",
        "k8s.io/utils",
        "sigs.k8s.io/json",
        "sigs.k8s.io/yaml",
    ),
}

TARGETS: dict[str, GoTarget] = {
    t.name: t
    for t in (
        # metrics-server links in the same go build as Kubernetes: on images/k8s's one module graph it shares the API
        # server library, client-go and the rest of their compiled packages (built on its own: 400 s of a cold build)
        GoTarget(
            "kubernetes",
            (*(f"k8s.io/kubernetes/cmd/{c}" for c in KUBE_COMMANDS), METRICS_SERVER_MAIN),
            (*KUBE_COMMANDS, "metrics-server"),
            module="k8s",
            # kubeadm and kind compare these with the cluster version; a bare build says v0.0.0-master.
            ldflags=_version_ldflags("k8s.io/component-base/version", v.KUBERNETES)
            + _version_ldflags("k8s.io/client-go/pkg/version", v.KUBERNETES),
            # as upstream's Makefile: stamping component-base instead would make the generic API server treat
            # v0.8 as its emulation version and hide metrics.k8s.io (discovery answers 404).
            package_ldflags=(
                (METRICS_SERVER_MAIN, _version_ldflags("k8s.io/client-go/pkg/version", v.METRICS_SERVER)),
            ),
        ),
        GoTarget("etcd", ("chaoskit.dev/images/etcd",), ("etcd",), module="etcd"),
        GoTarget("kind", (f"sigs.k8s.io/kind@{v.KIND}",), ("kind",)),
        # on its own module graph (client-go v0.36, not v1.34.4's v0.34): a cold build compiles those apart
        GoTarget("kwok", (f"sigs.k8s.io/kwok/cmd/kwok@{v.KWOK}",), ("kwok",)),
        GoTarget(
            "crictl",
            (f"sigs.k8s.io/cri-tools/cmd/crictl@{v.CRICTL}",),
            ("crictl",),
            ldflags=(f"-X sigs.k8s.io/cri-tools/pkg/version.Version={v.CRICTL.lstrip('v')}",),
        ),
        # on its own module graph too; stamped as upstream's Makefile does, else `helm version` says v4.3
        GoTarget(
            "helm",
            (f"helm.sh/helm/v4/cmd/helm@{v.HELM}",),
            ("helm",),
            ldflags=(f"-X helm.sh/helm/v4/internal/version.version={v.HELM}",),
        ),
        # CoreDNS with the plugins a cluster's DNS uses: the cloud backends' SDKs made most of a full build
        GoTarget("coredns", ("chaoskit.dev/images/coredns",), ("coredns",), module="coredns"),
        GoTarget("pause", ("chaoskit.dev/images/pause",), ("pause",), module="pause"),
        GoTarget("netd", ("chaoskit.dev/images/netd",), ("netd",), module="netd"),
        GoTarget("workload", ("chaoskit.dev/images/workload",), ("workload",), module="workload"),
        GoTarget(
            "runc-capfilter", ("chaoskit.dev/images/runc-capfilter",), ("runc-capfilter",), module="runc-capfilter"
        ),
    )
}


def go_version(runner: Runner) -> str:
    return runner.run(["go", "env", "GOVERSION"]).stdout.strip()


def target_key(target: GoTarget, go: str) -> str:
    source = tree_digest(images_dir() / target.module) if target.module else ""
    return cache_key(go, repr(target), source)


def build(target: GoTarget, cache: Cache, runner: Runner, *, go: str) -> Path:
    """Return the cache directory holding the target's binaries, building them when absent."""
    key = target_key(target, go)
    if (hit := cache.get("bin", target.name, key)) is not None:
        return hit
    with cache.entry("bin", target.name, key) as out:
        env = {**COMPILE_ENV, "GOBIN": str(out), "GOFLAGS": "-buildvcs=false"}
        cwd = images_dir() / target.module if target.module else out
        runner.run(target.argv(out), env=env, cwd=cwd, log=out.parent / f"{target.name}-{key}.log")
        missing = [o for o in target.outputs if not (out / o).is_file()]
        if missing:
            raise FileNotFoundError(f"go build of {target.name} produced no {', '.join(missing)}")
    return cache.path("bin", target.name, key)
