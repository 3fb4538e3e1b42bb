"""``gym-assets conformance run`` refuses before writing anything (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gym_assets.cli import main

CONFIGS = str(Path(__file__).resolve().parents[2] / "configs")


def _run(*argv: str) -> int:
    return main(["conformance", "run", "--configs", CONFIGS, *argv])


@pytest.mark.parametrize("timeout", ["0", "-1", "nan", "inf"])
def test_a_bad_timeout_exits_2_and_creates_nothing(tmp_path: Path, timeout: str, capsys) -> None:
    out = tmp_path / "run"
    assert _run("--output", str(out), "--timeout", timeout) == 2
    assert not out.exists()
    assert "--timeout must be a finite number" in capsys.readouterr().err


def test_an_existing_output_exits_2_and_is_left_alone(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "suite.json").write_text("mine\n")
    assert _run("--output", str(out)) == 2
    assert (out / "suite.json").read_text() == "mine\n"
    assert sorted(p.name for p in out.iterdir()) == ["suite.json"]
    assert "already exists" in capsys.readouterr().err


def test_an_unknown_harness_or_scenario_or_no_jobs_exits_2(tmp_path: Path) -> None:
    assert _run("--output", str(tmp_path / "a"), "--harness", "nope") == 2
    assert _run("--output", str(tmp_path / "b"), "--scenario", "nope") == 2
    assert _run("--output", str(tmp_path / "c"), "--jobs", "0") == 2
    assert not any((tmp_path / name).exists() for name in "abc")


def test_output_is_required_without_list_scenarios(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        _run()
    assert exc.value.code == 2
    assert "--output DIR is required" in capsys.readouterr().err


def test_a_harness_name_that_is_no_directory_name_is_refused(tmp_path: Path, capsys) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "harnesses.yaml").write_text(
        "harnesses:\n  ../up:\n    kind: builtin\n    agent_implementation: simple_agent\n"
    )
    argv = ["conformance", "run", "--configs", str(configs), "--output", str(tmp_path / "run")]
    assert main(argv) == 2
    assert not (tmp_path / "run").exists() and not (tmp_path / "up").exists()
    assert "harness '../up': a name is" in capsys.readouterr().err
