"""What a run publishes from its files at its end, on a real run (reference upstream): each
rollout's file in ``report/`` is its row whole, and neither summing the run up nor reading it
back holds the records whole."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.records import keys
from gym_assets.rollouts.analysis.results import read_result
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl, report_name
from gym_assets.rollouts.collection.manifest import read_run
from gym_assets.rollouts.collection.planned import Planned
from gym_assets.rollouts.run import publish_results
from gym_assets.workspace import Workspace

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
PADDING = 200_000  # characters of evidence added to each record


def _failure(task: int, rollout: int, message: str) -> dict:
    return {
        keys.TASK_INDEX: task,
        keys.ROLLOUT_INDEX: rollout,
        keys.FAILURE_CLASS: "agent_timeout",
        keys.FAILURE_KIND: "agent_timeout",
        keys.FAILURE_MESSAGE: message,
    }


def _write_rows(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_rollout_files_are_whole_rows_and_the_summary_holds_no_record(tmp_path):
    data, out = tmp_path / "data", tmp_path / "run"
    argv = ["rollouts", "--benchmark", "units", "--harness", "simple_agent", "--out", str(out),
            "--limit", "8", "--repeats", "25", "--configs", str(REPO / "configs"),
            "--data-root", str(data)]  # fmt: skip
    assert main(argv) == 0
    files = RunFiles(out)
    records = list(read_jsonl(files.records))
    # Rollout 0 failed twice and never recorded; rollout 1 failed once, then recorded.
    unrecorded, retried = records.pop(0), records[0]
    for record in records:
        record[keys.TRAJECTORY]["padding"] = "x" * PADDING  # evidence no summary reads
    _write_rows(files.records, records)
    first = (unrecorded[keys.TASK_INDEX], unrecorded[keys.ROLLOUT_INDEX])
    second = (retried[keys.TASK_INDEX], retried[keys.ROLLOUT_INDEX])
    failures = [_failure(*first, "first try"), _failure(*second, "timed out"),
                _failure(*first, "second try")]  # fmt: skip
    _write_rows(files.failures, failures)
    run = read_run(out)  # what compare and reverify read: no record whole either
    assert len(run.records) == len(records) and not any(
        keys.TRAJECTORY in row or "response" in row for row in run.records.values()
    )
    planned, manifest = Planned.of(run.inputs), run.manifest
    roots = Workspace(REPO / "configs", data)
    model = read_result(files.result).model

    tracemalloc.start()
    try:
        result = publish_results(files, planned, manifest, roots, [], model=model, seconds=1.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    held = PADDING * len(records)
    assert peak < held / 4, f"publishing held {peak:,} bytes for {held:,} of records"
    assert result.totals.outcomes.failed == 1 and result.totals.outcomes.produced == len(records)
    written = {
        path.name: json.loads(path.read_text()) for path in files.report_dir.glob("[0-9]*-*.json")
    }
    expected = {report_name(*first): failures[2]}
    for record in records:
        expected[report_name(record[keys.TASK_INDEX], record[keys.ROLLOUT_INDEX])] = record
    assert written == expected
