"""chaoskit.cluster.gobuild: the go command lines, the cache key, and build() reusing the cache."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from chaoskit.cluster import gobuild
from chaoskit.cluster.assets import images_dir
from chaoskit.cluster.cache import Cache
from chaoskit.errors import CommandError
from chaoskit.seams.shell import Completed, FakeRunner

GO = "go1.24.1"


@dataclass
class FakeGo(FakeRunner):
    """FakeRunner playing `go`: writes each wanted output where go would (GOBIN for install, -o for build).

    FakeRunner's responder only sees argv, so this subclass also records the env and cwd of each call.
    """

    outputs: tuple[str, ...] = ()
    envs: list[dict[str, str]] = field(default_factory=list)
    cwds: list[Path | None] = field(default_factory=list)

    def run(self, argv: Any, *, env: Mapping[str, str] | None = None, cwd: Path | None = None, **kw: Any) -> Completed:
        self.envs.append(dict(env or {}))
        self.cwds.append(cwd)
        done = super().run(argv, env=env, cwd=cwd, **kw)
        argv = list(argv)
        if argv[:2] == ["go", "install"]:
            dest = Path(self.envs[-1]["GOBIN"])
        elif argv[:2] == ["go", "build"]:
            dest = Path(argv[argv.index("-o") + 1])
        else:
            return done
        for name in self.outputs:
            (dest / name).write_bytes(b"\x7fELF fake " + name.encode())
        return done


def _ldflags(argv: list[str]) -> list[str]:
    flags = argv[argv.index("-ldflags") + 1]
    return flags.split(" -X ")[1:]


# --- argv --------------------------------------------------------------------------------------


def test_module_target_argv_builds_into_the_output_dir(tmp_path: Path) -> None:
    argv = gobuild.TARGETS["etcd"].argv(tmp_path / "out")
    assert argv == [
        "go",
        "build",
        "-trimpath",
        "-ldflags",
        "-s -w",
        "-o",
        f"{tmp_path / 'out'}/",
        "chaoskit.dev/images/etcd",
    ]


def test_remote_target_argv_installs_path_at_version(tmp_path: Path) -> None:
    argv = gobuild.TARGETS["kind"].argv(tmp_path / "out")
    assert argv == ["go", "install", "-trimpath", "-ldflags", "-s -w", "sigs.k8s.io/kind@v0.30.0"]
    assert str(tmp_path) not in " ".join(argv)  # go install finds GOBIN in the environment


def test_kwok_installs_its_pinned_release_with_the_version_its_source_carries(tmp_path: Path) -> None:
    argv = gobuild.TARGETS["kwok"].argv(tmp_path / "out")
    assert argv == ["go", "install", "-trimpath", "-ldflags", "-s -w", "sigs.k8s.io/kwok/cmd/kwok@v0.8.0"]
    assert gobuild.TARGETS["kwok"].outputs == ("kwok",)


def test_kubernetes_target_builds_every_command_and_metrics_server_into_one_dir(tmp_path: Path) -> None:
    target = gobuild.TARGETS["kubernetes"]
    argv = target.argv(tmp_path)
    assert argv[:2] == ["go", "build"]
    kube = [f"k8s.io/kubernetes/cmd/{c}" for c in gobuild.KUBE_COMMANDS]
    assert argv[-len(kube) - 1 :] == [*kube, gobuild.METRICS_SERVER_MAIN]
    assert set(target.outputs) == {*gobuild.KUBE_COMMANDS, "metrics-server"}


def test_metrics_server_is_stamped_with_its_own_version_after_the_kubernetes_stamps(tmp_path: Path) -> None:
    argv = gobuild.TARGETS["kubernetes"].argv(tmp_path)
    at = [i for i, a in enumerate(argv) if a == "-ldflags"]
    assert len(at) == 2  # go build: the last -ldflags whose pattern matches a main package wins
    pattern, _, flags = argv[at[1] + 1].partition("=")
    assert pattern == gobuild.METRICS_SERVER_MAIN
    assert flags.startswith("-s -w -X ")
    assert "k8s.io/client-go/pkg/version.gitVersion=v0.8.0" in flags
    assert "k8s.io/component-base/version" not in flags  # that stamp would hide metrics.k8s.io


@pytest.mark.parametrize(
    ("folder", "module", "version"),
    [("coredns", "github.com/coredns/coredns", "COREDNS"), ("k8s", "sigs.k8s.io/metrics-server", "METRICS_SERVER")],
)
def test_the_go_modules_pin_the_versions_the_images_are_tagged_with(folder: str, module: str, version: str) -> None:
    wanted = getattr(gobuild.v, version)
    gomod = (images_dir() / folder / "go.mod").read_text()
    assert f"\t{module} {wanted}" in gomod, (
        f"images/{folder}/go.mod must require {module} {wanted} (versions.{version})"
    )


@pytest.mark.parametrize("pkg", ["k8s.io/component-base/version", "k8s.io/client-go/pkg/version"])
def test_kubernetes_ldflags_stamp_version_v1_34_4(tmp_path: Path, pkg: str) -> None:
    flags = _ldflags(gobuild.TARGETS["kubernetes"].argv(tmp_path))
    assert f"{pkg}.gitVersion=v1.34.4" in flags
    assert f"{pkg}.gitMajor=1" in flags
    assert f"{pkg}.gitMinor=34" in flags
    assert f"{pkg}.gitTreeState=clean" in flags


def test_ldflags_keep_strip_flags_first(tmp_path: Path) -> None:
    argv = gobuild.TARGETS["crictl"].argv(tmp_path)
    assert argv[argv.index("-ldflags") + 1] == "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=1.34.0"


def test_every_module_target_has_its_folder_under_images() -> None:
    for target in gobuild.TARGETS.values():
        if target.module is not None:
            assert (images_dir() / target.module / "go.mod").is_file(), target.name


# --- target_key --------------------------------------------------------------------------------


def test_target_key_changes_when_go_version_changes() -> None:
    target = gobuild.TARGETS["kind"]
    assert gobuild.target_key(target, "go1.24.1") == gobuild.target_key(target, "go1.24.1")
    assert gobuild.target_key(target, "go1.24.1") != gobuild.target_key(target, "go1.25.0")


def test_target_key_differs_between_targets() -> None:
    keys = {gobuild.target_key(t, GO) for t in gobuild.TARGETS.values()}
    assert len(keys) == len(gobuild.TARGETS)


def test_target_key_changes_with_ldflags() -> None:
    target = gobuild.TARGETS["kind"]
    stamped = gobuild.GoTarget(target.name, target.packages, target.outputs, ldflags=("-X main.v=1",))
    assert gobuild.target_key(stamped, GO) != gobuild.target_key(target, GO)


# --- build -------------------------------------------------------------------------------------


def test_build_of_a_remote_target_installs_into_gobin_and_caches_it(tmp_path: Path) -> None:
    target = gobuild.TARGETS["kind"]
    cache = Cache(tmp_path / "cache")
    runner = FakeGo(outputs=target.outputs)

    out = gobuild.build(target, cache, runner, go=GO)

    assert out == cache.path("bin", "kind", gobuild.target_key(target, GO))
    assert (out / "kind").is_file()
    assert runner.calls == [tuple(target.argv(out))]
    (env,) = runner.envs
    assert env["CGO_ENABLED"] == "0"
    gobin = Path(env["GOBIN"])
    assert gobin.parent == cache.root / "bin" and gobin.name.startswith(".tmp-kind-")
    assert runner.cwds == [gobin]  # outside any module, as `go install path@version` wants
    assert not gobin.exists()  # renamed into place


def test_build_reuses_the_cache_on_a_second_call(tmp_path: Path) -> None:
    target = gobuild.TARGETS["kind"]
    cache = Cache(tmp_path)
    runner = FakeGo(outputs=target.outputs)

    first = gobuild.build(target, cache, runner, go=GO)
    second = gobuild.build(target, cache, runner, go=GO)

    assert first == second
    assert len(runner.calls) == 1


def test_build_runs_again_for_a_new_go_version(tmp_path: Path) -> None:
    target = gobuild.TARGETS["kind"]
    cache = Cache(tmp_path)
    runner = FakeGo(outputs=target.outputs)

    first = gobuild.build(target, cache, runner, go="go1.24.1")
    second = gobuild.build(target, cache, runner, go="go1.25.0")

    assert first != second
    assert len(runner.calls) == 2


def test_build_of_a_module_target_runs_in_its_module_and_writes_to_o_dir(tmp_path: Path) -> None:
    target = gobuild.TARGETS["pause"]
    cache = Cache(tmp_path)
    runner = FakeGo(outputs=target.outputs)

    out = gobuild.build(target, cache, runner, go=GO)

    assert (out / "pause").is_file()
    assert runner.cwds == [images_dir() / "pause"]
    (call,) = runner.calls
    assert call[:2] == ("go", "build")
    assert Path(runner.envs[0]["GOBIN"]) == Path(call[call.index("-o") + 1])


def test_cache_entry_is_not_left_behind_when_go_fails(tmp_path: Path) -> None:
    target = gobuild.TARGETS["kind"]
    cache = Cache(tmp_path)
    runner = FakeGo(failures={("go", "install"): "cannot find module providing package"})

    with pytest.raises(CommandError, match="cannot find module"):
        gobuild.build(target, cache, runner, go=GO)

    assert cache.get("bin", "kind", gobuild.target_key(target, GO)) is None
    assert list(tmp_path.glob("bin/.tmp-*")) == []


def test_cache_entry_is_not_left_behind_when_go_produces_no_binary(tmp_path: Path) -> None:
    target = gobuild.TARGETS["kubernetes"]
    cache = Cache(tmp_path)
    runner = FakeGo(outputs=("kubectl",))  # go "succeeded" but built one command of seven

    with pytest.raises(FileNotFoundError, match="kube-apiserver"):
        gobuild.build(target, cache, runner, go=GO)

    assert cache.get("bin", "kubernetes", gobuild.target_key(target, GO)) is None
    assert list(tmp_path.glob("bin/.tmp-*")) == []


def test_go_version_asks_go_env(tmp_path: Path) -> None:
    runner = FakeRunner(responses={("go", "env", "GOVERSION"): "go1.24.1\n"})
    assert gobuild.go_version(runner) == "go1.24.1"
    assert runner.calls == [("go", "env", "GOVERSION")]


def _requires(folder: str) -> dict[str, str]:
    """The module versions images/<folder>/go.mod requires, direct and indirect."""
    lines = (images_dir() / folder / "go.mod").read_text().splitlines()
    found = (re.match(r"\s*(?:require\s+)?(\S+\.\S+)\s+(v\S+)", line) for line in lines if "=>" not in line)
    return {m.group(1): m.group(2) for m in found if m}


@pytest.mark.parametrize("folder", sorted(gobuild.OWN_VERSIONS))
def test_etcd_and_coredns_pin_what_they_share_with_kubernetes_at_its_versions(folder: str) -> None:
    kubernetes, own = _requires("k8s"), _requires(folder)
    apart = {m: (v, kubernetes[m]) for m, v in own.items() if m in kubernetes and v != kubernetes[m]}
    assert set(apart) == set(gobuild.OWN_VERSIONS[folder]), (
        f"images/{folder}/go.mod differs from images/k8s/go.mod in {apart}: pin each at Kubernetes's version "
        f"(go get module@version in images/{folder}) or name it in gobuild.OWN_VERSIONS with why"
    )
