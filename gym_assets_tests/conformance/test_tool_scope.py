"""``conformance inspect`` and ``matrix`` take the tool scope from the benchmark by default: a
record whose task declares no tools (a HumanEval completion) gets no tool checks, and the
report says which scope it applied. ``--tools`` and ``--no-tools`` still declare it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.conformance.inspection import InspectionOptions, inspect_bundle
from gym_assets.conformance.scope import declares_tools
from gym_assets_tests.conformance import fixtures as fx


def tool_less_record() -> dict:
    """A completion task: its task declares no tools and the harness ran none."""
    record = fx.baseline_record()
    del record["responses_create_params"]["tools"]
    fx.trajectory(record)["tool_calls"] = []
    return record


def write(path: Path, *records: dict) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_only_the_task_s_tools_count() -> None:
    assert declares_tools(fx.baseline_record())
    assert not declares_tools(tool_less_record())
    assert not declares_tools({"responses_create_params": {"tools": []}})
    assert not declares_tools(None)


def test_inspect_of_a_tool_less_run_passes_without_no_tools(tmp_path, capsys) -> None:
    bundle = write(tmp_path / "bundle", tool_less_record())
    assert (
        main(["conformance", "inspect", "--bundle", str(bundle), "--output", str(tmp_path / "a")])
        == 0
    )
    said = capsys.readouterr().out
    assert "Tool scope: from the benchmark: 0 of 1 records' tasks declare tools" in said
    (summary,) = (
        json.loads(p.read_text()) for p in (tmp_path / "a").glob("*/evidence_summary.json")
    )
    assert summary["applicability"]["tools"] == "benchmark"
    assert summary["evidence"]["TE-5"]["verdict"] == "not_applicable"
    (report,) = (tmp_path / "a").glob("*/evidence_report.md")
    assert "Tool scope: from the benchmark: 0 of 1" in report.read_text()

    assert (
        main(
            [
                "conformance",
                "inspect",
                "--bundle",
                str(bundle),
                "--output",
                str(tmp_path / "b"),
                "--tools",
            ]
        )
        == 1
    )
    assert "Tool scope: declared by the caller, tools in scope" in capsys.readouterr().out
    assert (
        main(
            [
                "conformance",
                "inspect",
                "--bundle",
                str(bundle),
                "--output",
                str(tmp_path / "c"),
                "--no-tools",
            ]
        )
        == 0
    )
    assert "tools out of scope (--no-tools)" in capsys.readouterr().out


def test_a_task_that_declares_tools_keeps_its_tool_checks(tmp_path) -> None:
    """Per record: the tool task of a mixed bundle is still judged on its tools."""
    broken = fx.baseline_record()
    fx.trajectory(broken)["tool_calls"] = []
    bundle = write(tmp_path / "bundle", tool_less_record(), broken)
    inspection = inspect_bundle(
        bundle, tmp_path / "out", InspectionOptions(tools_from_benchmark=True)
    )
    assert not inspection.gate_met
    assert inspection.summary["fulfilled_records"] == 1
    assert "tool_calls.present" in inspection.summary["failing_checks"]
    assert inspection.summary["tool_scope"].startswith("Tool scope: from the benchmark: 1 of 2")


@pytest.mark.parametrize(("flags", "code"), [((), 0), (("--tools",), 1)])
def test_matrix_takes_the_same_scope_and_says_so(tmp_path, capsys, flags, code) -> None:
    bundle = write(tmp_path / "bundle", tool_less_record())
    argv = ["conformance", "matrix", "--harness", f"h={bundle}", "--output", str(tmp_path / "m")]
    assert main([*argv, *flags]) == code
    said = capsys.readouterr().out
    assert ("from the benchmark" in said) == (not flags)
    (markdown,) = (tmp_path / "m").glob("*/harness_evidence.md")
    assert "Tool scope: " in markdown.read_text()
