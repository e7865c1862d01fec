"""Reading playbook files: every way bytes fail to be one YAML mapping is a located problem, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from playbook_catalog import MINIMAL, load, make_catalog, problems

from chaoskit.errors import PlaybookError
from chaoskit.playbook import load_playbook


def test_syntax_error_points_where_the_parser_stopped() -> None:
    assert problems(MINIMAL.replace("name: demo", "name: demo: x")) == [
        "pb.yaml:4:13: invalid YAML: mapping values are not allowed here"
    ]


def test_unclosed_flow_sequence_is_a_syntax_error() -> None:
    assert problems(MINIMAL.replace("duration: 20s", "duration: [20s")) == [
        "pb.yaml:9:1: invalid YAML: while parsing a flow sequence: expected ',' or ']', but got '<stream end>'"
    ]


def test_tab_indentation_is_a_syntax_error_at_the_tab() -> None:
    assert problems(MINIMAL.replace("  name: demo", "\tname: demo")) == [
        "pb.yaml:4:1: invalid YAML: while scanning for the next token: "
        "found character '\\t' that cannot start any token"
    ]


def test_duplicate_key_points_at_the_second_occurrence() -> None:
    assert problems(MINIMAL + "      duration: 30s\n") == [
        'pb.yaml:9:7: duplicate key "duration" with value "30s" (original value: "20s")'
    ]


@pytest.mark.parametrize(
    ("text", "got"),
    [("- a\n- b\n", "a list"), ("just text\n", "a string"), ("42\n", "an integer"), ("true\n", "a boolean")],
)
def test_a_document_that_is_not_a_mapping_is_refused(text: str, got: str) -> None:
    assert problems(text) == [f"pb.yaml:1:1: expected a mapping (apiVersion, kind, metadata, spec), got {got}"]


def test_a_second_document_is_refused_where_it_starts() -> None:
    assert problems(MINIMAL + "---\n" + MINIMAL) == [
        "pb.yaml:9:1: a playbook file holds one YAML document; another one starts here"
    ]


@pytest.mark.parametrize("text", ["", "  \n\n"])
def test_an_empty_file_is_refused(text: str) -> None:
    assert problems(text) == ["pb.yaml:1:1: the file is empty; expected a Playbook mapping"]


@pytest.mark.parametrize("text", ["# only a comment\n", "null\n", "---\n"])
def test_an_empty_document_is_refused(text: str) -> None:
    assert problems(text) == ["pb.yaml:1:1: the document is empty; expected a Playbook mapping"]


def test_bytes_that_are_not_utf8_are_located_by_line_and_column() -> None:
    source = MINIMAL.encode().replace(b"demo", b"d\xe9mo")
    assert problems(source) == ["pb.yaml:4:10: not UTF-8: byte 0xe9 is not valid here"]


def test_a_utf8_byte_order_mark_is_accepted() -> None:
    assert load(b"\xef\xbb\xbf" + MINIMAL.encode()).metadata.name == "demo"


def test_control_characters_are_refused_at_their_position() -> None:
    assert problems(MINIMAL.replace("demo", "de\x00mo")) == [
        "pb.yaml:4:11: invalid YAML: character #x0000 is not allowed (special characters are not allowed)"
    ]


def test_keys_that_are_not_strings_are_refused_at_the_key() -> None:
    assert problems(MINIMAL + "  1: x\n  ? [a, b]\n  : y\n") == [
        "pb.yaml:9:3: spec: keys must be strings, got an integer: 1",
        "pb.yaml:10:5: spec: keys must be strings, got a list: ('a', 'b')",
    ]


def test_yaml_tags_are_refused_at_the_tagged_value() -> None:
    assert problems(MINIMAL.replace("20s", "!seconds 20")) == [
        "pb.yaml:8:17: spec.steps[0].duration: YAML tags are not supported here (!seconds)"
    ]


def test_a_bad_standard_tag_is_an_invalid_yaml_problem() -> None:
    assert problems(MINIMAL.replace("20s", "!!float twenty")) == [
        "pb.yaml:1:1: invalid YAML: could not convert string to float: 'twenty'"
    ]


def test_binary_values_are_refused_rather_than_read_as_text() -> None:
    assert problems(MINIMAL.replace("name: demo", "name: !!binary ZGVtbw==")) == [
        "pb.yaml:4:9: metadata.name: binary data (!!binary) is not supported here"
    ]


def test_dates_are_not_durations() -> None:
    assert problems(MINIMAL.replace("20s", "2001-01-01")) == [
        "pb.yaml:8:17: spec.steps[0].duration: expected a duration like 500ms, 20s, 1m30s, 2h or a number of seconds, "
        "got a date"
    ]


def test_an_undefined_alias_is_refused_where_it_is_used() -> None:
    assert problems(MINIMAL + "  measurements: *nothing\n") == [
        "pb.yaml:9:17: invalid YAML: found undefined alias 'nothing'"
    ]


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    assert problems("&root\napiVersion: chaoskit.dev/v1alpha1\nspec: *root\n") == [
        "pb.yaml:3:1: spec: an alias here refers to a mapping or list that contains it"
    ]


def test_aliases_that_expand_exponentially_are_cut_off() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]" for p, n in zip("abcd", "bcde", strict=True)]
    (problem,) = problems("\n".join(lines) + "\n")
    assert problem.endswith("the document expands to more than 100000 nodes (through aliases?)")


def test_deep_nesting_is_refused() -> None:
    (problem,) = problems("a: " + "[" * 150 + "]" * 150 + "\n")
    assert problem.startswith("pb.yaml:1:103: a[0][0]: nested deeper than 100 levels")


def test_anchors_aliases_and_merge_keys_work() -> None:
    text = """\
        apiVersion: chaoskit.dev/v1alpha1
        kind: Playbook
        metadata: {name: demo}
        spec:
          steps:
            - &step {fault: scheduler.down, duration: 20s, name: one}
            - <<: *step
              name: two
        """
    steps = load(text).spec.fault_steps()
    assert [(s.name, s.fault, s.duration) for s in steps] == [
        ("one", "scheduler.down", 20.0),
        ("two", "scheduler.down", 20.0),
    ]


def test_a_missing_file_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(PlaybookError) as info:
        load_playbook(missing, **make_catalog())
    assert [str(p) for p in info.value.problems] == [f"{missing}:1:1: cannot read the file: No such file or directory"]


def test_a_directory_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    with pytest.raises(PlaybookError) as info:
        load_playbook(tmp_path, **make_catalog())
    assert str(info.value.problems[0]) == f"{tmp_path}:1:1: cannot read the file: Is a directory"


def test_loading_has_no_side_effects(tmp_path: Path) -> None:
    path = tmp_path / "play.yaml"
    path.write_text(MINIMAL)
    before = sorted(tmp_path.iterdir()), path.read_bytes(), path.stat().st_mtime_ns
    load_playbook(path, **make_catalog())
    assert (sorted(tmp_path.iterdir()), path.read_bytes(), path.stat().st_mtime_ns) == before
