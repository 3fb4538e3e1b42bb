"""Success records and sidecar rows (shapes), and resume gating from what is on disk."""

from __future__ import annotations

import json
import os

import pytest

from gym_assets.errors import UserError
from gym_assets.records.accounting import outcome_of
from gym_assets.records.episode import EpisodeFailure
from gym_assets.records.evidence import FailureSidecarRow, RolloutRecord
from gym_assets.rollouts.collection.files import AppendLog, RunFiles, read_jsonl, repair_tail
from gym_assets.rollouts.collection.inputs import RolloutInput
from gym_assets.rollouts.collection.ledger import Ledger
from gym_assets.rollouts.collection.records import (
    environment_failure_row,
    failure_row,
    stamps,
    success_record,
)

ROW = {
    "task_id": {"taskset": "units", "task_id": "units-001"},
    "task_input": {"responses_create_params": {"input": "hi"}, "task_data": {}},
    "_ng_environment_server": "units_environment",
    "_ng_task_index": 4,
    "_ng_rollout_index": 1,
}
ITEM = RolloutInput.of(ROW, "units")


def test_success_record_carries_result_stamps_and_validates():
    stamped = stamps(ITEM, 0, "single_agent_turn", "units_simple_agent")
    result = {"reward": 1.0, "mask_sample": False, "evaluation_completed": True, "extra": 3}
    record = success_record(result, stamped.to_row(), {})
    assert record["_ng_task_index"] == 4 and record["_ng_rollout_index"] == 1
    assert "_ng_attempt_index" not in record
    assert record["_ng_environment_server"] == "units_environment"
    assert record["_ng_result_type"] == "single_agent_turn"
    assert record["_ng_task_id"] == {"taskset": "units", "task_id": "units-001"}
    assert record["agent_ref"] == {"name": "units_simple_agent"}
    assert record["extra"] == 3
    RolloutRecord.model_validate(record)
    assert stamps(ITEM, 2, "x", None).to_row()["_ng_attempt_index"] == 2


def test_environment_failure_row_matches_the_sidecar_shape():
    failure = EpisodeFailure.of(
        "agent broke", terminal=False, kind="agent_run_error", stage="agent"
    )
    row = environment_failure_row(stamps(ITEM, 1, "single_agent_turn", None), failure)
    assert row["_ng_failure_class"] == "environment_server_failed"
    assert row["_ng_failure_terminal"] is False
    assert row["_ng_failure_stage"] == "agent"
    assert row["_ng_failure_kind"] == "agent_run_error"
    assert row["_ng_failure_message"] == "agent broke"
    assert row["_ng_attempt_index"] == 1
    assert "reward" not in row and "response" not in row
    FailureSidecarRow.model_validate(row)
    clipped = failure_row(stamps(ITEM, 0, "x", None), "agent_run_error", "x" * 5000, terminal=False)
    assert len(clipped["_ng_failure_message"]) == 2000
    FailureSidecarRow.model_validate(clipped)


def test_outcomes():
    assert outcome_of({"reward": 0.0}) == "measured"
    assert outcome_of({"reward": 1.0, "mask_sample": True}) == "masked"
    assert outcome_of({"mask_sample": False}) == "unscored"


def _row(task, rollout, **extra):
    return {"_ng_task_index": task, "_ng_rollout_index": rollout, **extra}


def test_resume_skips_successes_terminal_failures_and_exhausted_rollouts(tmp_path):
    files = RunFiles(tmp_path)
    records, failures = AppendLog(files.records), AppendLog(files.failures)
    records.write(_row(0, 0, reward=0.0))
    for attempt in range(3):
        failures.write(_row(1, 0, _ng_failure_class="agent_run_error", _ng_attempt_index=attempt))
    failures.write(_row(2, 0, _ng_failure_class="plan_mismatch", _ng_failure_terminal=True))
    failures.write(_row(3, 0, _ng_failure_class="environment_server_failed"))
    records.close()
    failures.close()
    ledger = Ledger.read(files)
    assert ledger.next_attempt((0, 0)) is None  # succeeded
    assert ledger.next_attempt((1, 0)) is None  # three attempts: the cap
    assert ledger.next_attempt((2, 0)) is None  # terminal
    assert ledger.next_attempt((3, 0)) == 1  # retried as -a1
    assert ledger.next_attempt((4, 0)) == 0  # never ran (or was lost in flight)
    assert Ledger.read(files, max_attempts=5).next_attempt((1, 0)) == 3
    inputs = [
        RolloutInput.of({**ROW, "_ng_task_index": t, "_ng_rollout_index": 0}, "u") for t in range(5)
    ]
    pending = Ledger.read(files).pending(inputs)
    assert [(item.key, attempt) for item, attempt in pending] == [((3, 0), 1), ((4, 0), 0)]
    assert pending[0][0].rollout_id(pending[0][1]) == "3-0-a1"


def test_a_cut_short_last_line_is_dropped_before_appending(tmp_path):
    path = tmp_path / "rollouts.jsonl"
    path.write_text(json.dumps(_row(0, 0)) + "\n" + '{"_ng_task_index": 1, "_ng_rol')
    assert [row["_ng_task_index"] for row in read_jsonl(path)] == [0]
    assert repair_tail(path)
    assert not repair_tail(path)
    log = AppendLog(path)
    log.write(_row(1, 0))
    log.close()
    assert [json.loads(line)["_ng_task_index"] for line in path.read_text().splitlines()] == [0, 1]
    whole = tmp_path / "one.jsonl"
    whole.write_text('{"cut": ')
    assert repair_tail(whole) and whole.read_text() == ""


def test_a_run_file_that_is_a_fifo_is_refused_not_taken_as_missing(tmp_path) -> None:
    """A FIFO at a run file's name would block the reader (or, skipped, make a resumed run
    start again from nothing): it is refused by what it is."""
    path = tmp_path / "rollouts.jsonl"
    os.mkfifo(path)
    with pytest.raises(UserError, match="is a FIFO"):
        list(read_jsonl(path))
    assert list(read_jsonl(tmp_path / "absent.jsonl")) == []
