"""A rollout whose model call failed for good still leaves a judged record (NeMo Gym PR #4048).

Real runs through the gateway with a scripted upstream: a permanent 400, and 500 / 429 answered
until the agent's client runs out of retries. Each rollout's evidence still reaches its verifier,
and it gets a masked record (reward 0, the verifier's own reward kept as ``verifier_reward``,
every captured attempt in its trajectory, owned by the agent's invocation) whatever the verifier
awarded, and keeps its sidecar row;
`conformance inspect` judges that record under the `model_error` scope.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gym_assets.cli import main
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl

REPO = Path(__file__).resolve().parents[3]
CLIENT_ATTEMPTS = 3  # the simple agent's client: one try and max_retries=2 retries


def _run(tmp_path: Path, benchmark: str, steps: list[dict], *extra: str) -> int:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(steps))
    args = ["rollouts", "--benchmark", benchmark, "--harness", "simple_agent"]
    args += ["--out", str(tmp_path / "run"), "--limit", "2", "--upstream", "scripted"]
    args += ["--script", str(script), *extra]
    return main([*args, "--configs", str(REPO / "configs"), "--data-root", str(tmp_path / "d")])


def _owners(trajectory: dict[str, Any]) -> dict[str, list[str]]:
    owners: dict[str, list[str]] = {}
    for invocation in trajectory["invocations"]:
        for ref in invocation["model_calls"]:
            owners.setdefault(ref["model_call_id"], []).append(invocation["invocation_id"])
    return owners


def _assert_failed_call_record(record: dict[str, Any], status: int, attempts: int) -> None:
    assert record["mask_sample"] is True
    assert record["failure_kind"] == "agent_request_failed"
    assert str(status) in record["failure_reason"]
    assert record["reward"] == 0.0 and record["evaluation_completed"] is True  # verified
    assert record["verifier_reward"] == 0.0  # an empty answer
    assert record["response"]["output"] == [] and record["response"]["status"] == "failed"
    trajectory = record["ng_trajectory"]
    assert trajectory["rollout_id"] == f"{record['_ng_task_index']}-0"
    calls = trajectory["model_calls"]
    assert len(calls) == attempts
    for call in calls:
        meta = call["response_metadata"]
        assert meta["status_code"] == status and meta["response_id"] is None
        assert meta["error_category"]
        assert call["request"] is not None and call["response"]["error"]
    owners = _owners(trajectory)
    assert sorted(owners) == sorted(c["model_call_id"] for c in calls)
    assert all(len(owner) == 1 for owner in owners.values())  # each owned exactly once
    assert trajectory["turns"] == []
    capture = record["ng_model_call_capture"]
    assert [c["model_call_id"] for c in capture["calls"]] == [c["model_call_id"] for c in calls]


@pytest.mark.parametrize("benchmark", ["units", "arith"])  # a native and a legacy (flat) server
def test_a_permanent_400_leaves_a_masked_record_and_its_sidecar_row(tmp_path, capsys, benchmark):
    code = _run(tmp_path, benchmark, [{"error": 400, "times": 100, "message": "bad request"}])
    captured = capsys.readouterr()
    files = RunFiles(tmp_path / "run")
    records = sorted(read_jsonl(files.records), key=lambda r: r["_ng_task_index"])
    failures = sorted(read_jsonl(files.failures), key=lambda r: r["_ng_task_index"])
    assert [r["_ng_task_index"] for r in records] == [0, 1]
    for record in records:
        _assert_failed_call_record(record, 400, attempts=1)  # a 400 is not retried
    assert [(f["_ng_task_index"], f["_ng_failure_kind"]) for f in failures] == [
        (0, "agent_request_failed"),
        (1, "agent_request_failed"),
    ]
    assert all(f["_ng_failure_terminal"] is True and "reward" not in f for f in failures)
    # A run the endpoint refused fails, and says why.
    assert code == 1
    assert "masked by kind  : agent_request_failed 2" in captured.out
    error = captured.err.strip().splitlines()[-1]
    assert error.startswith("error: 2 of 2 planned rollouts unmeasured (100.0%; budget 5%)")
    assert "by kind: agent_request_failed 2" in error and "model endpoint failed" in error
    (metrics,) = json.loads(files.aggregate_metrics.read_text())
    assert metrics["outcomes"]["masked"] == 2 and metrics["outcomes"]["failed"] == 0
    assert metrics["masked_kinds"] == {"agent_request_failed": 2}


@pytest.mark.parametrize("status", [500, 429])
def test_errors_that_outlast_the_retries_leave_a_record_of_every_attempt(tmp_path, capsys, status):
    code = _run(tmp_path, "units", [{"error": status, "times": 100, "message": "busy"}])
    assert code == 1
    files = RunFiles(tmp_path / "run")
    records = list(read_jsonl(files.records))
    assert len(records) == 2
    for record in records:
        _assert_failed_call_record(record, status, attempts=CLIENT_ATTEMPTS)
    failures = list(read_jsonl(files.failures))
    assert len(failures) == 2 and all(f["_ng_failure_terminal"] is False for f in failures)
    # The rollouts are done: a resume dispatches nothing and writes nothing more.
    before = files.records.read_bytes(), files.failures.read_bytes()
    capsys.readouterr()
    _run(tmp_path, "units", [{"error": status, "times": 100, "message": "busy"}], "--resume")
    assert (files.records.read_bytes(), files.failures.read_bytes()) == before


def test_conformance_inspect_judges_the_record_of_a_refused_call(tmp_path, capsys):
    _run(tmp_path, "units", [{"error": 400, "times": 100, "message": "bad request"}])
    bundle = RunFiles(tmp_path / "run").records
    scope = ["--no-tools", "--no-verifier", "--no-steps"]  # the model_error scenario's scope
    capsys.readouterr()
    args = ["conformance", "inspect", "--bundle", str(bundle), "--output", str(tmp_path / "i")]
    code = main([*args, *scope])
    out = capsys.readouterr()
    assert "holds no records" not in out.err
    assert code == 0, out.err
    assert "P0 gate met" in out.out
    (report_dir,) = [path for path in (tmp_path / "i").iterdir() if path.is_dir()]
    summary = json.loads((report_dir / "evidence_summary.json").read_text())
    assert (summary["records"], summary["fulfilled_records"]) == (2, 2)
    judged = {label: summary["evidence"][label]["verdict"] for label in ("TE-1", "TE-2", "TE-8")}
    assert judged == dict.fromkeys(judged, "fulfilled")


def test_a_call_refused_after_a_tool_step_keeps_the_work_done_before_it(tmp_path, capsys):
    steps = [{"call": "calculate", "args": {"expression": "6*7"}}]
    steps += [{"error": 400, "times": 100, "message": "context too long"}]
    _run(tmp_path, "arith", steps)
    for record in read_jsonl(RunFiles(tmp_path / "run").records):
        assert record["mask_sample"] is True and record["reward"] == 0.0
        response = record["response"]  # the agent's partial response, not an empty one
        assert [item["type"] for item in response["output"]] == [
            "function_call",
            "function_call_output",
        ]
        trajectory = record["ng_trajectory"]
        statuses = [c["response_metadata"]["status_code"] for c in trajectory["model_calls"]]
        assert statuses == [200, 400]
        assert len(trajectory["turns"]) == 1 and len(trajectory["tool_calls"]) == 1
        assert trajectory["gaps"] == []
        assert sorted(_owners(trajectory)) == sorted(
            c["model_call_id"] for c in trajectory["model_calls"]
        )


def test_an_endpoint_that_never_answers_leaves_only_sidecar_rows(tmp_path, capsys, monkeypatch):
    """No HTTP answer at all (connection refused) proves nothing about the model: the rollout
    stays a failed attempt, dispatched again by --resume, and gets no record."""
    monkeypatch.setenv("REFUSED_ENDPOINT_KEY", "unused")
    args = ["rollouts", "--benchmark", "units", "--harness", "simple_agent", "--limit", "1"]
    args += ["--out", str(tmp_path / "run"), "--upstream", "openai", "--api-key-env"]
    args += ["REFUSED_ENDPOINT_KEY", "--base-url", "http://127.0.0.1:9/v1"]  # nothing listens
    flags = ["--configs", str(REPO / "configs"), "--data-root", str(tmp_path / "d")]
    assert main([*args, *flags]) == 1
    assert "none of the 1 dispatched rollouts produced a result" in capsys.readouterr().err
    files = RunFiles(tmp_path / "run")
    assert list(read_jsonl(files.records)) == []
    (failure,) = read_jsonl(files.failures)
    assert failure["_ng_failure_kind"] == "agent_request_failed"
    assert failure["_ng_failure_terminal"] is False


def test_a_positive_verifier_reward_on_a_failed_call_is_still_masked(tmp_path, capsys):
    """The right answer (81752) came before the call that failed for good: the verifier awards
    1.0 from the evidence, and the rollout stays masked with that reward kept beside it."""
    steps = [{"text": "81752", "call": "calculate", "args": {"expression": "1"}}]
    steps += [{"error": 400, "times": 100, "message": "context too long"}]
    code = _run(tmp_path, "arith", steps, "--max-unmeasured-share", "1")
    assert code == 0  # a budget of 100%: the masked rollouts are within it
    files = RunFiles(tmp_path / "run")
    first = next(r for r in read_jsonl(files.records) if r["_ng_task_index"] == 0)
    assert first["verifier_reward"] == 1.0 and first["evaluation_completed"] is True
    assert first["reward"] == 0.0 and first["mask_sample"] is True
    assert first["failure_kind"] == "agent_request_failed"
    (metrics,) = json.loads(files.aggregate_metrics.read_text())
    assert metrics["summary"] == "mean - over 0 of 2 planned; 2 masked; 0 failed"
    assert "mean - over 0 of 2 planned; 2 masked; 0 failed" in capsys.readouterr().out
