"""Prometheus beside the cluster: Debian's binaries cached by version, a scrape config per node, rules promtool accepts.

The promtool and server tests use the real binaries (downloaded once into the cache, about 20 MB from Debian's
mirror) but no cluster: the server scrapes an exporter in this process.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from chaoskit.cluster import prometheus as prom
from chaoskit.cluster.assets import prometheus_rules
from chaoskit.cluster.cache import Cache, default_root
from chaoskit.errors import CommandError, MissingDependency
from chaoskit.exporters.prometheus import Exporter, serve
from chaoskit.model.record import RunRecord
from chaoskit.model.timeline import MeasurementResult
from chaoskit.seams.kube import FakeKube
from chaoskit.seams.shell import Completed, FakeRunner, SubprocessRunner

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "deploy" / "prometheus" / "rules.yml"
RULES_TEST = Path(__file__).parent / "data" / "prometheus" / "rules_test.yml"
VERSION = "2.42.0+ds-5+deb12u1"
POLICY = f"prometheus:\n  Installed: (none)\n  Candidate: {VERSION}\n  Version table:\n     {VERSION} 500\n"
NODES = [
    prom.Node("chaoskit-control-plane", "172.18.0.2", True),
    prom.Node("chaoskit-worker", "172.18.0.4", False),
    prom.Node("chaoskit-worker2", "172.18.0.3", False),
]


# ---- install
def test_the_candidate_version_comes_from_apt_cache_policy() -> None:
    assert prom.candidate_version(FakeRunner({("apt-cache", "policy"): POLICY})) == VERSION
    none = "prometheus:\n  Installed: (none)\n  Candidate: (none)\n"
    assert prom.candidate_version(FakeRunner({("apt-cache", "policy"): none})) is None
    assert prom.candidate_version(FakeRunner({("apt-cache", "policy"): ""})) is None


def _unpack(argv: tuple[str, ...]) -> Completed | None:
    """Stands in for apt-get download and dpkg-deb -x: leaves what they would."""
    if "download" in argv:
        return None  # the .deb is made by the cwd-less fake below
    if argv[:2] == ("dpkg-deb", "-x"):
        bin_dir = Path(argv[3]) / "usr" / "bin"
        bin_dir.mkdir(parents=True)
        for name in ("prometheus", "promtool"):
            (bin_dir / name).write_text("#!/bin/sh\n")
            (bin_dir / name).chmod(0o755)
        return Completed(argv, 0, "")
    return None


@pytest.mark.skipif(os.geteuid() != 0, reason="the download path as root passes apt's sandbox option")
def test_a_cache_miss_downloads_the_package_and_unpacks_only_into_the_cache(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    runner = FakeRunner({("apt-cache", "policy"): POLICY}, responder=_unpack)
    # apt-get download writes into its working directory, which the fake cannot see: pre-place the .deb there
    original = runner.run

    def run(argv: Any, **kw: Any) -> Completed:
        if "download" in argv:
            (Path(kw["cwd"]) / f"prometheus_{VERSION}_amd64.deb").write_bytes(b"!<arch>")
        return original(argv, **kw)

    runner.run = run  # type: ignore[method-assign]
    tools = prom.install(runner, cache)
    assert tools.version == VERSION
    assert tools.prometheus == cache.path("prometheus", "prometheus", VERSION) / "root/usr/bin/prometheus"
    assert not list(tools.prometheus.parents[3].glob("*.deb"))  # the .deb is not kept
    assert ("apt-get", "-o", "APT::Sandbox::User=root", "download", f"prometheus={VERSION}") in runner.calls
    assert not any(c[:2] == ("dpkg", "-i") or "install" in c for c in runner.calls)  # never the Debian service


def test_a_cached_version_is_used_without_downloading(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    with cache.entry("prometheus", "prometheus", VERSION) as out:
        _unpack(("dpkg-deb", "-x", "x.deb", str(out / "root")))
    runner = FakeRunner({("apt-cache", "policy"): POLICY})
    assert prom.install(runner, cache).promtool.name == "promtool"
    assert runner.calls == [("apt-cache", "policy", "prometheus")]


@pytest.mark.skipif(os.geteuid() != 0, reason="apt-get update is only tried as root")
def test_no_candidate_even_after_apt_get_update_names_the_missing_package(tmp_path: Path) -> None:
    runner = FakeRunner({("apt-cache", "policy"): "prometheus:\n  Candidate: (none)\n"})
    with pytest.raises(MissingDependency, match="Prometheus is not available.*Debian package `prometheus`"):
        prom.install(runner, Cache(tmp_path))
    assert ("apt-get", "update", "-qq") in runner.calls


# ---- config
def _yaml(text: str) -> Any:
    return YAML(typ="safe").load(text)


def _config(token: Path | None = Path("/s/token"), ca: Path | None = Path("/s/ca.crt")) -> prom.Config:
    return prom.Config(prom.cluster_jobs(NODES, "127.0.0.1:9464"), (RULES,), token, ca)


def test_every_node_gets_a_kube_proxy_and_a_kubelet_target_labelled_with_its_name() -> None:
    doc = _yaml(prom.render(_config()))
    jobs = {j["job_name"]: j for j in doc["scrape_configs"]}
    for job in ("kube-proxy", "kubelet", "cadvisor"):
        groups = jobs[job]["static_configs"]
        assert {g["labels"]["node"] for g in groups} == {n.name for n in NODES}
    proxy = {g["labels"]["node"]: g["targets"] for g in jobs["kube-proxy"]["static_configs"]}
    assert proxy["chaoskit-worker"] == ["172.18.0.4:10249"] and jobs["kube-proxy"]["scheme"] == "http"
    assert jobs["cadvisor"]["metrics_path"] == "/metrics/cadvisor"


def test_control_plane_components_are_scraped_on_control_plane_nodes_only() -> None:
    jobs = {j["job_name"]: j for j in _yaml(prom.render(_config()))["scrape_configs"]}
    for job, port in (
        ("apiserver", 6443),
        ("kube-controller-manager", 10257),
        ("kube-scheduler", 10259),
        ("etcd", 2381),
    ):
        assert [t for g in jobs[job]["static_configs"] for t in g["targets"]] == [f"172.18.0.2:{port}"]


def test_https_jobs_send_the_token_and_only_the_api_server_is_verified_against_the_cluster_ca() -> None:
    jobs = {j["job_name"]: j for j in _yaml(prom.render(_config()))["scrape_configs"]}
    for name in ("kubelet", "cadvisor", "apiserver", "kube-controller-manager", "kube-scheduler"):
        assert jobs[name]["authorization"] == {"type": "Bearer", "credentials_file": "/s/token"}
    assert jobs["apiserver"]["tls_config"] == {"insecure_skip_verify": False, "ca_file": "/s/ca.crt"}
    assert jobs["kubelet"]["tls_config"] == {"insecure_skip_verify": True}  # self-signed serving cert
    for name in ("chaoskit", "kube-proxy", "etcd"):
        assert "authorization" not in jobs[name] and "tls_config" not in jobs[name]


def test_the_exporter_is_the_first_job_and_optional() -> None:
    assert _yaml(prom.render(_config()))["scrape_configs"][0]["static_configs"] == [{"targets": ["127.0.0.1:9464"]}]
    assert all(j.name != "chaoskit" for j in prom.cluster_jobs(NODES, None))


def test_the_diagnosis_is_scraped_only_when_named_as_the_job_its_alerts_read() -> None:
    assert all(j.name != prom.DIAGNOSIS_JOB for j in prom.cluster_jobs(NODES, "127.0.0.1:9464"))
    (job,) = [j for j in prom.cluster_jobs(NODES, None, diagnosis="127.0.0.1:9465") if j.name == prom.DIAGNOSIS_JOB]
    assert [t.address for t in job.targets] == ["127.0.0.1:9465"]
    assert f'up{{job="{prom.DIAGNOSIS_JOB}"}}' in RULES.read_text()


def test_the_global_section_scrapes_often_enough_for_second_long_lags() -> None:
    doc = _yaml(prom.render(_config()))
    assert doc["global"] == {"scrape_interval": "5s", "scrape_timeout": "5s", "evaluation_interval": "5s"}
    assert doc["rule_files"] == [str(RULES)]


def test_the_monitoring_role_allows_get_of_metrics_and_nothing_else() -> None:
    role = next(o for o in prom.monitoring_objects() if o["kind"] == "ClusterRole")
    assert all(rule["verbs"] == ["get"] for rule in role["rules"])
    assert {"nonResourceURLs": ["/metrics", "/metrics/*"], "verbs": ["get"]} in role["rules"]
    assert {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]} in role["rules"]
    binding = next(o for o in prom.monitoring_objects() if o["kind"] == "ClusterRoleBinding")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "chaoskit-monitoring"}]


class _TokenKube(FakeKube):
    """FakeKube plus the TokenRequest subresource, which answers a token instead of storing an object."""

    def request(self, method: str, path: str, body: Any = None, query: list[tuple[str, str]] | None = None) -> Any:
        if method == "POST" and path.endswith("/token"):
            self.calls.append((method, path))
            return {"status": {"token": "tok-" + str(len(self.calls))}}
        return super().request(method, path, body, query)


def _cluster() -> _TokenKube:
    nodes = {
        f"/api/v1/nodes/{n.name}": {
            "metadata": {
                "name": n.name,
                "labels": {"node-role.kubernetes.io/control-plane": ""} if n.control_plane else {},
            },
            "status": {"addresses": [{"type": "InternalIP", "address": n.ip}, {"type": "Hostname", "address": n.name}]},
        }
        for n in NODES
    }
    ca = {"/api/v1/namespaces/kube-system/configmaps/kube-root-ca.crt": {"data": {"ca.crt": "-----BEGIN CERT"}}}
    return _TokenKube({**nodes, **ca})


def test_ensure_monitoring_is_idempotent_and_asks_a_fresh_token() -> None:
    kube = _cluster()
    assert prom.ensure_monitoring(kube).startswith("tok-")
    prom.ensure_monitoring(kube)  # the second time the ClusterRole exists: 409, then a patch
    assert "/apis/rbac.authorization.k8s.io/v1/clusterroles/chaoskit-prometheus" in kube.objects
    assert ("PATCH", "/apis/rbac.authorization.k8s.io/v1/clusterroles/chaoskit-prometheus") in kube.calls
    assert "/api/v1/namespaces/chaoskit-monitoring/serviceaccounts/prometheus" in kube.objects


def test_cluster_nodes_come_from_the_api_with_their_internal_ip_and_role() -> None:
    assert prom.cluster_nodes(_cluster()) == NODES


def test_prepare_writes_config_ca_and_a_private_token(tmp_path: Path) -> None:
    config = prom.prepare(_cluster(), tmp_path, "127.0.0.1:9464", rules=RULES)
    assert stat.S_IMODE((tmp_path / "token").stat().st_mode) == 0o600
    assert (tmp_path / "token").read_text().startswith("tok-")
    assert (tmp_path / "ca.crt").read_text() == "-----BEGIN CERT"
    assert _yaml((tmp_path / "prometheus.yml").read_text())["rule_files"] == [str(RULES)]
    assert config.token_file == tmp_path / "token"


def test_the_repository_ships_its_rules_file() -> None:
    assert prometheus_rules() == RULES


def test_a_stale_pid_file_is_not_a_running_server(tmp_path: Path) -> None:
    (tmp_path / "prometheus.pid").write_text(f"{os.getpid()}\n")  # alive, but not prometheus
    assert prom.adopt(tmp_path) is None
    assert not (tmp_path / "prometheus.pid").exists()
    assert prom.adopt(tmp_path) is None


# ---- with the real binaries
@pytest.fixture(scope="module")
def tools() -> prom.Install:
    try:
        return prom.install(SubprocessRunner(), Cache(default_root()))
    except MissingDependency as exc:
        pytest.skip(f"no Prometheus binaries on this host: {exc}")


def test_promtool_accepts_the_shipped_recording_rules(tools: prom.Install) -> None:
    out = prom.check_rules(SubprocessRunner(), tools, RULES)
    assert "SUCCESS" in out


def test_the_recording_rules_compute_what_their_comments_say(tools: prom.Install) -> None:
    done = SubprocessRunner().run([str(tools.promtool), "test", "rules", RULES_TEST.name], cwd=RULES_TEST.parent)
    assert "SUCCESS" in done.output


def test_promtool_rejects_a_broken_rule(tools: prom.Install, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("groups:\n  - name: x\n    rules:\n      - record: a:b\n        expr: rate(x[5m]\n")
    with pytest.raises(CommandError, match="promtool check rules"):
        prom.check_rules(SubprocessRunner(), tools, bad)


def test_promtool_accepts_the_rendered_config(tools: prom.Install, tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t")
    (tmp_path / "ca.crt").write_text("")
    path = tmp_path / "prometheus.yml"
    path.write_text(prom.render(_config(tmp_path / "token", tmp_path / "ca.crt")))
    assert "SUCCESS" in prom.check_config(SubprocessRunner(), tools, path)


@pytest.fixture
def exporter_port() -> Iterator[int]:
    ex = Exporter()
    rec = RunRecord("unit", "chaoskit", "ns", "j", "u1", time.time() - 10, time.time())
    rec.measurements = [
        MeasurementResult.from_dict(
            {
                "name": "m",
                "type": "hpa_scale_up",
                "started_at": 0.0,
                "samples": [
                    {
                        "measurement": "hpa_scale_up",
                        "stage": "scheduled",
                        "component": "scheduler",
                        "subject": "p",
                        "start": 1.0,
                        "end": 1.3,
                        "precision": 0.001,
                    }
                ],
            }
        )
    ]
    ex.observe_record(rec.to_dict())
    port = prom.free_port()
    server, _ = serve(ex, port, "127.0.0.1")
    yield port
    server.shutdown()
    server.server_close()


def test_the_real_server_scrapes_the_exporter_and_records_rules(
    tools: prom.Install, exporter_port: int, tmp_path: Path
) -> None:
    config = prom.Config(
        (prom.Job("chaoskit", (prom.Target(f"127.0.0.1:{exporter_port}"),)),),
        (RULES,),
        scrape_interval=1,
        evaluation_interval=1,
    )
    (tmp_path / "prometheus.yml").write_text(prom.render(config))
    server = prom.start(tools, tmp_path)
    try:
        server.wait_ready(30)
        deadline = time.monotonic() + 30
        runs: list[dict[str, Any]] = []
        p50: list[dict[str, Any]] = []
        while time.monotonic() < deadline and not (runs and p50):
            runs = server.query('chaoskit_runs_total{playbook="unit"}')
            p50 = server.query('chaoskit:hpa_stage_duration_seconds:p50{stage="scheduled"}')
            time.sleep(0.5)
        assert runs and runs[0]["value"][1] == "1"
        assert p50 and 0.25 < float(p50[0]["value"][1]) <= 0.5  # 0.3 s, within its bucket
        with pytest.raises(prom.PrometheusError, match="bad_data"):
            server.query("rate(")
    finally:
        server.stop()
    assert not server.alive() and not (tmp_path / "prometheus.pid").exists()
