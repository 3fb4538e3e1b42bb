"""A cli harness that is not installed is ``unavailable`` in a conformance run: no episode, no
pass, no crash; the report says why and how to install it, and the exit code is 1 (the P0 gate
is not met), never 2 (which says the machinery failed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets_tests.rollouts.harnesses.adapters.fake_adapter import add_uninstalled

REPO = Path(__file__).resolve().parents[2]
REASON = "harness 'fakecli' is not installed ("
INSTALL = "`gym-assets harness install fakecli`"


@pytest.fixture
def configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundled configs plus ``fakecli``, which is installed nowhere."""
    target = tmp_path / "configs"
    shutil.copytree(REPO / "configs", target)
    add_uninstalled(target, tmp_path / "harnesses", monkeypatch)
    return target


def _run(configs: Path, output: Path, *argv: str) -> int:
    return main(["conformance", "run", "--configs", str(configs), "--output", str(output), *argv])


def test_an_uninstalled_harness_is_reported_unavailable(configs, tmp_path, capsys) -> None:
    output = tmp_path / "run"
    assert _run(configs, output, "--harness", "fakecli") == 1
    said = capsys.readouterr().out
    assert said.startswith(f"fakecli: unavailable: {REASON}")
    assert "not every harness meets the P0 gate" in said
    summary = json.loads((output / "conformance_summary.json").read_text())
    assert summary["verdict"] == "not_fulfilled" and summary["exit_code"] == 1
    entry = summary["harnesses"]["fakecli"]
    assert entry["verdict"] == "unavailable" and entry["scenarios"] == []
    assert entry["unavailable"].startswith(REASON) and entry["unavailable"].endswith(INSTALL)
    markdown = (output / "conformance_report.md").read_text()
    assert "| fakecli | ✗ unavailable | 0 / 0 |" in markdown
    assert f"## fakecli\n\n**Unavailable**: {REASON}" in markdown
    assert "```bash\ngym-assets harness install fakecli\n```" in markdown
    page = (output / "conformance_report.html").read_text()
    assert "fakecli — ✗ unavailable" in page
    assert "<code>gym-assets harness install fakecli</code>" in page
    assert not (output / "fakecli").exists()  # no episode was started


@pytest.mark.slow
def test_the_other_harnesses_still_run(configs, tmp_path) -> None:
    output = tmp_path / "run"
    argv = ["--harness", "simple_agent", "--harness", "fakecli", "--scenario", "tool_success"]
    assert _run(configs, output, *argv) == 1
    summary = json.loads((output / "conformance_summary.json").read_text())
    verdicts = {name: h["verdict"] for name, h in summary["harnesses"].items()}
    assert verdicts == {"simple_agent": "fulfilled", "fakecli": "unavailable"}
    markdown = (output / "conformance_report.md").read_text()
    assert "| simple_agent | ✓ | 1 / 1 |" in markdown


def test_rollouts_refuse_it_with_the_install_command(configs, tmp_path, capsys) -> None:
    out = tmp_path / "rollouts"
    data = tmp_path / "data"
    argv = ["rollouts", "--benchmark", "arith", "--harness", "fakecli", "--out", str(out)]
    assert main([*argv, "--configs", str(configs), "--data-root", str(data)]) == 1
    error = capsys.readouterr().err
    assert error.startswith(f"error: {REASON}") and error.endswith(f"{INSTALL}\n")
    assert error.count("\n") == 1 and "Traceback" not in error
    assert not out.exists() and not data.exists()  # refused before any product was made
