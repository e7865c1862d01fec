"""deploy/helm/chaoskit renders what `chaoskit install` applies (for both --nodes), plus Helm's labels and the hook
that issues the agents' TLS as install does; helm lints it and refuses a bad value by name. helm itself is built
from the module proxy at its pinned version (`make helm`; `make test` builds it first, so CI never skips these)."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from ruamel.yaml import YAML

from chaoskit import __version__
from chaoskit.cli import cli
from chaoskit.cluster import helm, install
from chaoskit.cluster.assets import deploy_dir
from chaoskit.cluster.cache import Cache, default_root
from chaoskit.cluster.selfimage import CHAOSKIT_IMAGE
from chaoskit.seams.kube import FakeKube, Kube
from chaoskit.seams.shell import Completed, FakeRunner

CHART = deploy_dir().parent / "helm" / "chaoskit"
HELM_LABELS = (
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
    "helm.sh/chart",
)
HOOK = "helm.sh/hook"

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def helm_bin() -> Path:
    found = helm.path(Cache(default_root()))
    if not found.is_file():
        pytest.skip(f"helm is not built: `make helm` builds it into {found} (a few minutes cold, cached after)")
    return found


def _helm(helm_bin: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(helm_bin), *args], capture_output=True, text=True, timeout=60, check=False)


def _render(helm_bin: Path, *sets: str) -> list[Obj]:
    argv = ["template", "chaoskit", str(CHART), "-n", install.NAMESPACE, "--include-crds"]
    done = _helm(helm_bin, *argv, *(a for s in sets for a in ("--set", s)))
    assert done.returncode == 0, done.stderr
    return [d for d in YAML(typ="safe").load_all(done.stdout) if d]


def _key(obj: Obj) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


def _as_install_makes_it(obj: Obj) -> Obj:
    """The object without what Helm adds: its standard labels, and the nodes annotation where it says the default."""
    out = copy.deepcopy(obj)
    for meta in (out["metadata"], out.get("spec", {}).get("template", {}).get("metadata")):
        if meta is None:
            continue
        for label in HELM_LABELS:
            meta.get("labels", {}).pop(label, None)
        annotations = meta.get("annotations", {})
        if annotations.get(install.NODES_ANNOTATION) == "all":
            del annotations[install.NODES_ANNOTATION]  # install writes no annotation for its default
        if "annotations" in meta and not annotations:
            del meta["annotations"]
    return out


def _split(rendered: list[Obj]) -> tuple[dict[str, Obj], dict[str, Obj]]:
    """(the release's objects, the hooks'), by kind/name."""
    hooks = {_key(o): o for o in rendered if HOOK in (o["metadata"].get("annotations") or {})}
    return {_key(o): o for o in rendered if _key(o) not in hooks}, hooks


@pytest.mark.parametrize("nodes", install.NODES)
def test_the_chart_renders_what_install_applies(helm_bin: Path, nodes: install.Nodes) -> None:
    release, _ = _split(_render(helm_bin, f"nodes={nodes}"))
    # Helm owns the release namespace (--create-namespace); the hook gives it install's labels
    wanted = {_key(o): o for o in install.manifests(CHAOSKIT_IMAGE, nodes=nodes) if o["kind"] != "Namespace"}
    assert sorted(release) == sorted(wanted)
    for key, obj in release.items():
        assert _as_install_makes_it(obj) == wanted[key], key
    agent = release["DaemonSet/chaoskit-agent"]
    assert agent["metadata"]["annotations"][install.NODES_ANNOTATION] == nodes  # explicit, for `all` too
    assert agent["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    assert agent["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/instance"] == "chaoskit"


def test_an_image_id_rolls_the_pods_as_installs_does(helm_bin: Path) -> None:
    image_id = "sha256:" + "ab" * 32
    release, _ = _split(_render(helm_bin, f"image.id={image_id}"))
    wanted = {_key(o): o for o in install.manifests(CHAOSKIT_IMAGE, image_id) if o["kind"] != "Namespace"}
    for key in ("DaemonSet/chaoskit-agent", "Deployment/chaoskit-operator"):
        assert release[key]["spec"]["template"]["metadata"]["annotations"] == {install.IMAGE_ID: image_id}
        assert _as_install_makes_it(release[key]) == wanted[key], key
    plain, _ = _split(_render(helm_bin))
    assert "annotations" not in plain["DaemonSet/chaoskit-agent"]["spec"]["template"]["metadata"]


def test_the_operators_diagnosis_period_reaches_it_as_installs_does(helm_bin: Path) -> None:
    release, _ = _split(_render(helm_bin, "operator.diagnoseEvery=30"))
    wanted = {_key(o): o for o in install.manifests(CHAOSKIT_IMAGE, diagnose_every=30) if o["kind"] != "Namespace"}
    operator = release["Deployment/chaoskit-operator"]
    assert _as_install_makes_it(operator) == wanted["Deployment/chaoskit-operator"]
    assert operator["spec"]["template"]["spec"]["containers"][0]["args"][-2:] == ["--diagnose-every", "30"]
    plain, _ = _split(_render(helm_bin))
    assert (
        "--diagnose-every"
        not in plain["Deployment/chaoskit-operator"]["spec"]["template"]["spec"]["containers"][0]["args"]
    )


def test_the_chart_is_versioned_with_chaoskit_and_its_values_reach_the_pods(helm_bin: Path) -> None:
    chart = YAML(typ="safe").load((CHART / "Chart.yaml").read_text())
    assert (chart["apiVersion"], chart["version"], chart["appVersion"]) == ("v2", "0.1.0", __version__)
    release, _ = _split(
        _render(
            helm_bin,
            "image.repository=registry.example/chaoskit",
            "image.tag=dev",
            "image.pullPolicy=Always",
            "agent.resources.limits.memory=300Mi",
            "operator.resources.requests.cpu=200m",
        )
    )
    for key in ("DaemonSet/chaoskit-agent", "Deployment/chaoskit-operator"):
        (container,) = release[key]["spec"]["template"]["spec"]["containers"]
        assert (container["image"], container["imagePullPolicy"]) == ("registry.example/chaoskit:dev", "Always")
    agent = release["DaemonSet/chaoskit-agent"]["spec"]["template"]["spec"]["containers"][0]
    assert agent["resources"]["limits"] == {"memory": "300Mi"}
    operator = release["Deployment/chaoskit-operator"]["spec"]["template"]["spec"]["containers"][0]
    assert operator["resources"]["requests"]["cpu"] == "200m"


def test_the_hooks_issue_the_secrets_before_install_and_delete_them_before_uninstall(
    helm_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, hooks = _split(_render(helm_bin))
    assert sorted(hooks) == [
        "ClusterRole/chaoskit-setup-chaoskit-system",
        "ClusterRoleBinding/chaoskit-setup-chaoskit-system",
        "Job/chaoskit-setup",
        "Job/chaoskit-teardown",
        "Role/chaoskit-setup",
        "RoleBinding/chaoskit-setup",
        "ServiceAccount/chaoskit-setup",
    ]
    for key, obj in hooks.items():
        annotations = obj["metadata"]["annotations"]
        assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded", key
        # the service account and its roles first: hooks of one event run in weight order
        assert int(annotations["helm.sh/hook-weight"]) == (0 if obj["kind"] == "Job" else -10), key
    setup, teardown = hooks["Job/chaoskit-setup"], hooks["Job/chaoskit-teardown"]
    assert setup["metadata"]["annotations"][HOOK] == "pre-install,pre-upgrade"
    assert teardown["metadata"]["annotations"][HOOK] == "pre-delete"
    (_, named) = hooks["Role/chaoskit-setup"]["rules"]
    assert named["resourceNames"] == [install.AGENT_SECRET, install.CLIENT_SECRET]

    # what the Jobs run, against an API of their own: the pairs install issues, kept on upgrade, deleted at the end
    # unless an experiment still runs
    kube = FakeKube()
    monkeypatch.setattr(Kube, "in_cluster", classmethod(lambda cls: kube))
    (container,) = setup["spec"]["template"]["spec"]["containers"]
    for _ in ("install", "upgrade"):
        done = CliRunner().invoke(cli, container["args"])
        assert done.exit_code == 0, done.output
    client = kube.get(f"/api/v1/namespaces/{install.NAMESPACE}/secrets/{install.CLIENT_SECRET}")
    assert client["type"] == "kubernetes.io/tls" and set(client["data"]) == {"ca.crt", "tls.crt", "tls.key"}
    assert "issued a new CA" not in done.output  # the upgrade's run found them
    namespace = kube.get(f"/api/v1/namespaces/{install.NAMESPACE}")
    assert namespace["metadata"]["labels"] == install.manifests()[0]["metadata"]["labels"]
    (container,) = teardown["spec"]["template"]["spec"]["containers"]
    running = {"metadata": {"name": "x", "namespace": "team", "finalizers": ["chaoskit.dev/revert"]}}
    kube.objects[install.EXPERIMENTS] = {"items": [running]}
    refused = CliRunner().invoke(cli, container["args"])
    assert refused.exit_code != 0 and "ChaosExperiments still running: team/x" in str(refused.exception)
    kube.objects[install.EXPERIMENTS] = {"items": []}
    done = CliRunner().invoke(cli, container["args"])
    assert done.exit_code == 0, done.output
    assert kube.find(f"/api/v1/namespaces/{install.NAMESPACE}/secrets/{install.CLIENT_SECRET}") is None


def test_without_tls_create_the_pods_mount_the_secrets_named_and_no_hook_runs(helm_bin: Path) -> None:
    release, hooks = _split(
        _render(helm_bin, "tls.create=false", "tls.existingSecrets.agent=a-tls", "tls.existingSecrets.client=c-tls")
    )
    assert hooks == {}
    for key, secret in (("DaemonSet/chaoskit-agent", "a-tls"), ("Deployment/chaoskit-operator", "c-tls")):
        (tls,) = [v for v in release[key]["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls"]
        assert tls["secret"]["secretName"] == secret


def test_helm_lints_the_chart(helm_bin: Path) -> None:
    done = _helm(helm_bin, "lint", str(CHART), "--strict")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("nodes=masters", "at '/nodes': value must be one of 'all', 'workers'"),
        ("node=workers", "additional properties 'node' not allowed"),
        ("tls.create=yes", "at '/tls/create': got string, want boolean"),
    ],
)
def test_a_bad_value_is_refused_by_name(helm_bin: Path, value: str, said: str) -> None:
    done = _helm(helm_bin, "template", "chaoskit", str(CHART), "--set", value)
    assert done.returncode != 0
    assert said in done.stderr


# --- the helm build ----------------------------------------------------------------------------


def test_helm_is_built_once_at_its_pinned_version_and_offered_in_the_cache_bin(tmp_path: Path) -> None:
    def go(argv: tuple[str, ...]) -> Completed | None:
        if argv[:2] == ("go", "install"):
            gobin = next(p for p in (tmp_path / "bin").iterdir() if p.name.startswith(".tmp-helm-"))
            (gobin / "helm").write_bytes(b"\x7fELF helm")
        return Completed(argv, 0, "go1.24.1\n" if argv[:2] == ("go", "env") else "")

    runner, cache = FakeRunner(responder=go), Cache(tmp_path)
    offered = helm.ensure(cache, runner)
    assert offered == tmp_path / "bin" / "helm" and offered.read_bytes() == b"\x7fELF helm"
    (build,) = [c for c in runner.calls if c[:2] == ("go", "install")]
    assert build[-1] == "helm.sh/helm/v4/cmd/helm@v4.3.2"
    assert "-X helm.sh/helm/v4/internal/version.version=v4.3.2" in build[build.index("-ldflags") + 1]
    assert helm.ensure(cache, runner) == offered
    assert [c for c in runner.calls if c[:2] == ("go", "install")] == [build]  # the second: cached
