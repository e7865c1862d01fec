"""Loading playbooks: every validation problem reported at its file:line:col, all of them at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from playbook_catalog import EXAMPLE, FILE, MINIMAL, load, make_catalog, problems

from chaoskit.errors import EXIT_INVALID_PLAYBOOK, PlaybookError
from chaoskit.model.playbook import ConcurrentStep, FaultStep
from chaoskit.playbook import load_playbook, parse_playbook

# MINIMAL's lines: 1 apiVersion, 2 kind, 3 metadata:, 4 name, 5 spec:, 6 steps:, 7 "- fault:", 8 duration
STEP_LINE = 7


def test_the_example_playbook_loads_with_every_field() -> None:
    playbook = load_playbook(EXAMPLE, **make_catalog())

    assert playbook.metadata.name == "scheduler-down"
    spec = playbook.spec
    assert (spec.cluster, spec.namespace) == ("chaoskit", "chaoskit-play")
    assert spec.workload is not None and spec.workload.hpa.max_replicas == 6 and spec.workload.load.burn_ms == 50
    assert spec.steady_state[0].check == "nodes-ready" and spec.steady_state[0].timeout == 120.0
    first, group = spec.steps
    assert isinstance(first, FaultStep) and isinstance(group, ConcurrentStep)
    assert (first.name, first.duration, first.deadline, first.after) == ("stop-scheduler", 20.0, 90.0, 0.0)
    assert first.target is not None and first.target.role == "control-plane"
    assert [s.name for s in spec.fault_steps()] == ["stop-scheduler", "2.1-kube-proxy.freeze"]
    assert spec.thresholds[0].max == 30.0 and spec.thresholds[0].stage == "scheduled"


def test_defaults_fill_name_deadline_namespace_and_cluster() -> None:
    playbook = load(MINIMAL)

    step = playbook.spec.fault_steps()[0]
    assert step.name == "1-scheduler.down"
    assert step.deadline == 20.0 + 60.0
    assert step.target is None and step.params == {}
    assert playbook.spec.namespace == "chaoskit-demo"
    assert playbook.spec.cluster == "chaoskit"
    assert playbook.spec.workload is None


def test_unknown_fault_suggests_the_closest_name_at_its_line() -> None:
    assert problems(MINIMAL.replace("scheduler.down", "schedular.down")) == [
        "pb.yaml:7:14: spec.steps[0].fault: unknown fault 'schedular.down'; did you mean 'scheduler.down'?"
    ]


def test_unknown_check_and_measurement_suggest_close_names() -> None:
    text = (
        MINIMAL + "  steadyState:\n    - check: node-ready\n  measurements:\n    - name: up\n      type: hpa_scaleup\n"
    )
    assert problems(text) == [
        "pb.yaml:10:14: spec.steadyState[0].check: unknown check 'node-ready'; did you mean 'nodes-ready'?",
        "pb.yaml:13:13: spec.measurements[0].type: unknown measurement 'hpa_scaleup'; did you mean 'hpa_scale_up'?",
    ]


def test_missing_field_points_at_the_enclosing_mapping() -> None:
    assert problems(MINIMAL.replace("  name: demo\n", "  description: x\n")) == [
        "pb.yaml:4:3: metadata.name: required field is missing"
    ]
    assert problems(MINIMAL.replace("      duration: 20s\n", "")) == [
        f"pb.yaml:{STEP_LINE}:7: spec.steps[0].duration: required field is missing"
    ]


def test_missing_steps_point_at_spec_and_empty_steps_at_the_list() -> None:
    head = MINIMAL.split("  steps:")[0]
    assert problems(head + "  cluster: chaoskit\n") == ["pb.yaml:6:3: spec.steps: required field is missing"]
    assert problems(head + "  steps: []\n") == ["pb.yaml:6:10: spec.steps: must not be empty"]


def test_unknown_field_points_at_the_key_and_suggests_the_field() -> None:
    assert problems(MINIMAL + "      durration: 3s\n") == [
        "pb.yaml:9:7: spec.steps[0].durration: unknown field; did you mean 'duration'?"
    ]


def test_snake_case_keys_are_unknown_in_yaml_and_point_to_camel_case() -> None:
    assert problems(MINIMAL + "  steady_state: []\n") == [
        "pb.yaml:9:3: spec.steady_state: unknown field; did you mean 'steadyState'?"
    ]


def test_unknown_field_with_nothing_close_lists_the_fields() -> None:
    assert problems(MINIMAL.replace("  name: demo\n", "  name: demo\n  zzz: 1\n")) == [
        "pb.yaml:5:3: metadata.zzz: unknown field; expected one of: description, name"
    ]


@pytest.mark.parametrize(
    ("duration", "message"),
    [
        ("20 seconds", "invalid duration '20 seconds': write it like 500ms, 20s, 1m30s, 2h or a number of seconds"),
        ("-5", "duration must not be negative, got -5"),
        ("-5s", "duration must not be negative, got '-5s'"),
        ("0s", "must be longer than 0s"),
        ("true", "expected a duration like 500ms, 20s, 1m30s, 2h or a number of seconds, got a boolean"),
        ("[1]", "expected a duration like 500ms, 20s, 1m30s, 2h or a number of seconds, got a list"),
        (".inf", "duration must be a finite number of seconds, got inf"),
    ],
)
def test_bad_duration_is_reported_at_its_value(duration: str, message: str) -> None:
    assert problems(MINIMAL.replace("20s", duration)) == [f"pb.yaml:8:17: spec.steps[0].duration: {message}"]


def test_deadline_must_exceed_duration() -> None:
    assert problems(MINIMAL + "      deadline: 10s\n") == [
        "pb.yaml:9:17: spec.steps[0].deadline: must exceed duration (20s): the node heals itself at the deadline"
    ]


def test_fault_params_are_validated_against_the_faults_params_model_inside_params() -> None:
    text = MINIMAL.replace("scheduler.down", "apiserver.etcd-delay") + (
        "      params:\n        delay: soon\n        jiter: 1s\n"
    )
    assert problems(text) == [
        "pb.yaml:10:16: spec.steps[0].params.delay: invalid duration 'soon': "
        "write it like 500ms, 20s, 1m30s, 2h or a number of seconds",
        "pb.yaml:11:9: spec.steps[0].params.jiter: unknown field; did you mean 'jitter'?",
    ]


def test_required_fault_params_missing_point_at_the_step() -> None:
    assert problems(MINIMAL.replace("scheduler.down", "apiserver.etcd-delay")) == [
        f"pb.yaml:{STEP_LINE}:7: spec.steps[0].params.delay: required field is missing"
    ]


def test_fault_params_in_flow_style_point_at_the_value() -> None:
    text = MINIMAL.replace("scheduler.down", "kubelet.stop") + "      params: {signal: SIGKILL}\n"
    assert problems(text) == [
        "pb.yaml:9:24: spec.steps[0].params.signal: expected 'SIGSTOP' or 'SIGTERM', got 'SIGKILL'"
    ]


def test_valid_fault_params_load() -> None:
    text = MINIMAL.replace("scheduler.down", "kubelet.stop") + "      params: {signal: SIGTERM}\n"
    assert load(text).spec.fault_steps()[0].params == {"signal": "SIGTERM"}


def test_check_params_are_validated_too() -> None:
    text = MINIMAL + "  steadyState:\n    - check: nodes-ready\n      params: {extra: 1}\n"
    assert problems(text) == ["pb.yaml:11:16: spec.steadyState[0].params.extra: unknown field"]


def test_wrong_api_version_and_kind_are_reported_at_their_values() -> None:
    text = MINIMAL.replace("v1alpha1", "v1").replace("kind: Playbook", "kind: Playbok")
    assert problems(text) == [
        "pb.yaml:1:13: apiVersion: expected 'chaoskit.dev/v1alpha1', got 'chaoskit.dev/v1'",
        "pb.yaml:2:7: kind: expected 'Playbook', got 'Playbok'",
    ]


def test_wrong_types_say_what_was_expected_and_what_was_found() -> None:
    assert problems(MINIMAL.replace("metadata:\n  name: demo\n", "metadata: [demo]\n")) == [
        "pb.yaml:3:11: metadata: expected a mapping, got a list"
    ]
    assert problems(MINIMAL + "    - just a string\n") == [
        "pb.yaml:9:7: spec.steps[1]: expected a mapping, got a string ('just a string')"
    ]


def test_names_must_be_dns_labels() -> None:
    assert problems(MINIMAL.replace("name: demo", "name: Demo_1")) == [
        "pb.yaml:4:9: metadata.name: 'Demo_1' is not a DNS-1123 label: lowercase letters, digits and '-', "
        "starting and ending with a letter or digit"
    ]


def test_node_target_must_be_a_node_name_or_role() -> None:
    assert problems(MINIMAL + "      target: {node: Worker_1}\n") == [
        "pb.yaml:9:22: spec.steps[0].target.node: 'Worker_1' is not a node name, control-plane, worker or any"
    ]


def test_duplicate_step_names_point_at_the_second_name() -> None:
    text = MINIMAL + "      name: a\n    - fault: kube-proxy.freeze\n      name: a\n      duration: 1s\n"
    assert problems(text) == ["pb.yaml:11:13: spec.steps[1].name: step name 'a' is already used by spec.steps[0]"]


def test_a_given_name_may_not_take_another_steps_default_name() -> None:
    text = MINIMAL + "    - fault: kube-proxy.freeze\n      name: 1-scheduler.down\n      duration: 1s\n"
    assert problems(text) == [
        "pb.yaml:10:13: spec.steps[1].name: step name '1-scheduler.down' is already used by spec.steps[0]"
    ]


def test_measurement_names_are_unique_and_thresholds_must_name_one() -> None:
    text = MINIMAL + (
        "  measurements:\n"
        "    - {name: up, type: hpa_scale_up}\n"
        "    - {name: up, type: hpa_scale_up}\n"
        "  thresholds:\n"
        "    - {measurement: upp, stat: p99, max: 30s}\n"
    )
    assert problems(text) == [
        "pb.yaml:11:14: spec.measurements[1].name: measurement name 'up' is already used by spec.measurements[0]",
        "pb.yaml:13:21: spec.thresholds[0].measurement: no measurement named 'upp'; did you mean 'up'?",
    ]


def test_threshold_needs_a_bound_and_min_not_above_max() -> None:
    text = MINIMAL + (
        "  measurements:\n"
        "    - {name: up, type: hpa_scale_up}\n"
        "  thresholds:\n"
        "    - measurement: up\n"
        "      stat: p99\n"
        "    - {measurement: up, stat: count, min: 3, max: 1}\n"
        "    - {measurement: up, stat: p100, max: 1s}\n"
    )
    assert problems(text) == [
        "pb.yaml:12:7: spec.thresholds[0]: a threshold needs max, min or both",
        "pb.yaml:14:43: spec.thresholds[1].min: min (3) exceeds max (1)",
        "pb.yaml:15:31: spec.thresholds[2].stat: expected 'p50', 'p90', 'p99', 'max', 'mean' or 'count', got 'p100'",
    ]


def test_concurrent_steps_are_validated_like_steps() -> None:
    text = MINIMAL + (
        "    - concurrent:\n"
        "        - fault: kube-proxy.freze\n"
        "          duration: 1s\n"
        "        - fault: kubelet.stop\n"
        "    - concurrent: []\n"
    )
    assert problems(text) == [
        "pb.yaml:10:18: spec.steps[1].concurrent[0].fault: unknown fault 'kube-proxy.freze'; "
        "did you mean 'kube-proxy.freeze'?",
        "pb.yaml:12:11: spec.steps[1].concurrent[1].duration: required field is missing",
        "pb.yaml:13:19: spec.steps[2].concurrent: must not be empty",
    ]


def test_a_name_too_long_for_the_default_namespace_is_reported_at_the_name() -> None:
    name = "a" * 60
    assert problems(MINIMAL.replace("name: demo", f"name: {name}")) == [
        f"pb.yaml:4:9: metadata.name: too long for the default namespace 'chaoskit-{name}' "
        "(63 characters at most); shorten it or set spec.namespace"
    ]
    assert load(MINIMAL.replace("name: demo", f"name: {name}") + "  namespace: play\n").spec.namespace == "play"


def test_workload_numbers_are_bounded_and_hpa_min_not_above_max() -> None:
    text = MINIMAL + "  workload:\n    hpa: {minReplicas: 3, maxReplicas: 2}\n    load: {concurrency: -1, burnMs: x}\n"
    assert problems(text) == [
        "pb.yaml:10:24: spec.workload.hpa.minReplicas: minReplicas (3) exceeds maxReplicas (2)",
        "pb.yaml:11:25: spec.workload.load.concurrency: must be at least 0, got -1",
        "pb.yaml:11:37: spec.workload.load.burnMs: expected an integer, got a string ('x')",
    ]


def test_several_problems_are_reported_together_in_file_order() -> None:
    text = """\
        apiVersion: chaoskit.dev/v1alpha1
        kind: Playbook
        metadata:
          name: Bad_Name
        spec:
          workload:
            replicas: many
          steps:
            - fault: schedular.down
              duration: 20s
              deadline: 5s
            - fault: kubelet.stop
              duration: soon
              params: {signal: SIGKILL}
          thresholds:
            - {measurement: nothing, stat: p99, max: 1s}
        """
    found = problems(text)
    assert [line.split(": ", 1)[0] for line in found] == [
        "pb.yaml:4:9",
        "pb.yaml:7:15",
        "pb.yaml:9:14",
        "pb.yaml:11:17",
        "pb.yaml:13:17",
        "pb.yaml:14:24",
        "pb.yaml:16:21",
    ]


def test_playbook_error_carries_problems_and_exit_code_3() -> None:
    with pytest.raises(PlaybookError) as info:
        load(MINIMAL.replace("20s", "x"))
    error = info.value
    assert error.exit_code == EXIT_INVALID_PLAYBOOK == 3
    assert [(p.file, p.line, p.col, p.path) for p in error.problems] == [(FILE, 8, 17, "spec.steps[0].duration")]
    assert str(error).startswith("invalid playbook (1 problem):\n  pb.yaml:8:17: spec.steps[0].duration: ")


def test_load_playbook_reads_a_file_and_names_it_in_problems(tmp_path: Path) -> None:
    path = tmp_path / "play.yaml"
    path.write_text(MINIMAL.replace("20s", "x"))
    with pytest.raises(PlaybookError) as info:
        load_playbook(path, **make_catalog())
    assert str(info.value.problems[0]).startswith(f"{path}:8:17: spec.steps[0].duration: invalid duration 'x'")


def test_without_registries_the_real_catalog_is_used() -> None:
    with pytest.raises(PlaybookError, match="unknown fault 'no-such.fault'"):
        parse_playbook(MINIMAL.replace("scheduler.down", "no-such.fault"))


def test_a_scale_up_needs_the_workload_and_room_in_its_hpa() -> None:
    assert problems(MINIMAL + "      scaleUp: {minReplicas: 3}\n") == [
        "pb.yaml:9:16: spec.steps[0].scaleUp: needs spec.workload or spec.subject: chaoskit raises an HPA's minReplicas"
    ]
    with_workload = MINIMAL.replace("spec:\n", "spec:\n  workload: {hpa: {minReplicas: 2, maxReplicas: 4}}\n")
    assert problems(with_workload + "      scaleUp: {minReplicas: 5, at: effect}\n") == [
        "pb.yaml:10:30: spec.steps[0].scaleUp.minReplicas: must be above the HPA's minReplicas (2) and at most its "
        "maxReplicas (4)"
    ]
    step = load(with_workload + "      scaleUp: {minReplicas: 4, at: recovered}\n").spec.fault_steps()[0]
    assert step.scale_up is not None and (step.scale_up.min_replicas, step.scale_up.at) == (4, "recovered")


def test_a_subject_names_exactly_one_workload_and_excludes_chaoskits() -> None:
    subject = "  subject: {namespace: shop, deployment: prices, statefulSet: db}\n"
    assert problems(MINIMAL.replace("spec:\n", "spec:\n" + subject)) == [
        "pb.yaml:6:63: spec.subject.statefulSet: give one of deployment, statefulSet and selector, not deployment "
        "and statefulSet"
    ]
    both = "  workload: {}\n  subject: {namespace: shop, selector: {app: prices}}\n"
    assert problems(MINIMAL.replace("spec:\n", "spec:\n" + both)) == [
        "pb.yaml:7:12: spec.subject: give workload (chaoskit's) or subject (yours), not both"
    ]
    none = "  subject: {namespace: shop, load: {service: web, path: nope}}\n"
    assert problems(MINIMAL.replace("spec:\n", "spec:\n" + none)) == [
        "pb.yaml:6:12: spec.subject: name your workload: deployment, statefulSet or selector",
        "pb.yaml:6:57: spec.subject.load.path: 'nope' is not a URL path: it starts with /",
    ]


PROBES = """\
  probes:
    - name: shop
      http: {url: "http://storefront.shop/?item=tea", timeout: 1s}
      every: 250ms
      slo: {successRate: 99, p99: 300ms}
    - name: ready
      k8s: {apiVersion: apps/v1, kind: Deployment, namespace: shop, name: prices, condition: Available}
      when: [during]
    - name: rate
      promql: {query: "sum(up)", min: 3}
      when: [effect]
"""


def test_probes_of_every_kind_parse() -> None:
    pb = parse_playbook(MINIMAL.replace("spec:\n", "spec:\n" + PROBES), **make_catalog())
    assert [(p.name, p.kind, p.when) for p in pb.spec.probes] == [
        ("shop", "http", ["before", "during", "after"]),
        ("ready", "k8s", ["during"]),
        ("rate", "promql", ["effect"]),
    ]
    assert pb.spec.probes[0].slo is not None and pb.spec.probes[0].slo.p99 == 0.3


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            ('url: "http://storefront.shop/?item=tea"', "url: storefront"),
            "pb.yaml:8:19: spec.probes[0].http.url: 'storefront' is not an http:// or https:// URL with a host",
        ),
        (
            (", p99: 300ms}", ", p99: soon}"),
            "pb.yaml:10:35: spec.probes[0].slo.p99: invalid duration 'soon': write "
            "it like 500ms, 20s, 1m30s, 2h or a number of seconds",
        ),
        (
            ("slo: {successRate: 99, p99: 300ms}", "slo: {}"),
            "pb.yaml:10:12: spec.probes[0].slo: give successRate, p50, p99 or max",
        ),
        (
            ("      slo: {successRate: 99, p99: 300ms}\n", ""),
            "pb.yaml:7:7: spec.probes[0]: an http probe needs an slo: successRate, p50, p99 or max",
        ),
        (
            ("condition: Available", "field: status.readyReplicas"),
            "pb.yaml:12:90: spec.probes[1].k8s.field: a field needs equals, min or max",
        ),
        (
            ("when: [during]", "when: [sometimes]"),
            "pb.yaml:13:14: spec.probes[1].when[0]: expected 'before', 'during', 'after' or 'effect', got 'sometimes'",
        ),
        (
            ("- name: rate", "- name: shop"),
            "pb.yaml:14:13: spec.probes[2].name: probe name 'shop' is already used by spec.probes[0]",
        ),
        (
            ('query: "sum(up)"', 'query: "sum(rate(up[1m])"'),
            "pb.yaml:15:23: spec.probes[2].promql.query: not PromQL: "
            "expected an operator, ',' or ')' after 'rate(up[1m])', "
            "found the end at character 17",
        ),
        (
            ('query: "sum(up)"', 'query: "sum(up) by job"'),
            "pb.yaml:15:23: spec.probes[2].promql.query: not PromQL: "
            "expected '(' after 'by', found 'job' at character 12",
        ),
        (
            ("kind: Deployment, namespace: shop", "kind: deployment, namespace: shop"),
            "pb.yaml:12:40: spec.probes[1].k8s.kind: 'deployment' is not a kind: CamelCase, like Deployment",
        ),
        (
            ('promql: {query: "sum(up)", min: 3}', 'promql: {query: "sum(up)"}\n      command: {argv: [echo]}'),
            "pb.yaml:14:7: spec.probes[2]: give exactly one of http, promql, k8s and command (given: promql and "
            "command)",
        ),
    ],
)
def test_every_probe_field_is_checked_at_its_line(change: tuple[str, str], problem: str) -> None:
    text = MINIMAL.replace("spec:\n", "spec:\n" + PROBES.replace(*change))
    assert problems(text) == [problem]
