"""`chaoskit validate`: ok lines on stdout, problems on stderr, exit 0 when all valid and 3 otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from playbook_catalog import EXAMPLE, MINIMAL, make_catalog

from chaoskit.cli import cli
from chaoskit.cli.playbook import Catalog, validate
from chaoskit.errors import EXIT_INVALID_PLAYBOOK, EXIT_OK, EXIT_USAGE, UsageError


@pytest.fixture
def catalog() -> Catalog:
    return Catalog(**make_catalog())


@pytest.fixture
def bad(tmp_path: Path) -> Path:
    path = tmp_path / "bad.yaml"
    path.write_text(MINIMAL.replace("20s", "soon").replace("scheduler.down", "schedular.down"))
    return path


def _run(catalog: Catalog, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(validate, list(args), obj=catalog)
    return result.exit_code, result.stdout, result.stderr


def test_valid_playbooks_print_ok_and_exit_0(catalog: Catalog) -> None:
    code, out, err = _run(catalog, EXAMPLE, EXAMPLE)
    assert (code, out, err) == (EXIT_OK, f"ok: {EXAMPLE}\nok: {EXAMPLE}\n", "")


def test_an_invalid_playbook_prints_its_problems_on_stderr_and_exits_3(catalog: Catalog, bad: Path) -> None:
    code, out, err = _run(catalog, EXAMPLE, str(bad))
    assert code == EXIT_INVALID_PLAYBOOK
    assert out == f"ok: {EXAMPLE}\n"
    assert err.splitlines() == [
        f"{bad}:7:14: spec.steps[0].fault: unknown fault 'schedular.down'; did you mean 'scheduler.down'?",
        f"{bad}:8:17: spec.steps[0].duration: invalid duration 'soon': "
        "write it like 500ms, 20s, 1m30s, 2h or a number of seconds",
    ]


def test_a_missing_file_exits_3_with_a_problem(catalog: Catalog, tmp_path: Path) -> None:
    code, out, err = _run(catalog, str(tmp_path / "missing.yaml"))
    assert code == EXIT_INVALID_PLAYBOOK
    assert "missing.yaml:1:1: cannot read the file" in err


def test_json_output_lists_the_problems_on_stdout(catalog: Catalog, bad: Path) -> None:
    code, out, _ = _run(catalog, "-o", "json", EXAMPLE, str(bad))
    report = json.loads(out)
    assert code == EXIT_INVALID_PLAYBOOK
    assert report["ok"] is False
    assert report["valid"] == [EXAMPLE]
    assert report["problems"][0] == {
        "file": str(bad),
        "line": 7,
        "col": 14,
        "path": "spec.steps[0].fault",
        "message": "unknown fault 'schedular.down'; did you mean 'scheduler.down'?",
    }


def test_json_output_of_valid_playbooks_is_ok(catalog: Catalog) -> None:
    code, out, _ = _run(catalog, "-o", "json", EXAMPLE)
    assert (code, json.loads(out)) == (EXIT_OK, {"ok": True, "valid": [EXAMPLE], "problems": [], "notes": []})


def test_validate_without_files_is_a_usage_error(catalog: Catalog) -> None:
    code, _, err = _run(catalog)
    assert code == EXIT_USAGE
    assert "Missing argument" in err


def test_validate_is_a_top_level_command_using_the_real_catalog(bad: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", str(bad)])
    assert result.exit_code == EXIT_INVALID_PLAYBOOK
    assert "unknown fault 'schedular.down'" in result.stderr


def test_the_installed_entry_point_exits_3_for_an_invalid_playbook(bad: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "chaoskit", "validate", str(bad)], capture_output=True, text=True)
    assert run.returncode == EXIT_INVALID_PLAYBOOK
    assert f"{bad}:8:17: spec.steps[0].duration" in run.stderr


def test_a_folder_is_every_playbook_in_it_each_problem_at_file_line_col(catalog: Catalog, bad: Path) -> None:
    good = bad.parent / "good.yml"
    good.write_text(Path(EXAMPLE).read_text())
    code, out, err = _run(catalog, str(bad.parent))
    assert code == EXIT_INVALID_PLAYBOOK
    assert out == f"ok: {good}\n"
    assert err.splitlines()[0].startswith(f"{bad}:7:14: spec.steps[0].fault: unknown fault")


def test_a_folder_without_playbooks_is_a_usage_error(catalog: Catalog, tmp_path: Path) -> None:
    result = CliRunner().invoke(validate, [str(tmp_path)], obj=catalog)
    assert isinstance(result.exception, UsageError) and result.exception.exit_code == EXIT_USAGE  # main() exits 2
    assert "no playbook (*.yaml, *.yml) in" in str(result.exception)
