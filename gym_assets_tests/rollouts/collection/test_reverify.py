"""``gym-assets rollouts reverify``: re-score a finished run with the current verifiers.

Real runs first (reference upstream, real verifiers), then reverify over their files: with the
verifiers unchanged it reproduces the records byte for byte, for both task-input shapes; a
record graded by another verifier (its saved grade edited) is graded anew and lands in the diff;
records of failed model calls, and records a verifier grades from the episode's session state,
are kept; the run itself is never written.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import psutil
import pytest

from gym_assets.cli import main
from gym_assets.rollouts import reverify
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl
from gym_assets.rollouts.reverify import default_out, reverify_run
from gym_assets.tasks.catalog import load_catalog
from gym_assets.workspace import Workspace

REPO = Path(__file__).resolve().parents[3]


def _flags(tmp_path: Path) -> list[str]:
    return ["--configs", str(REPO / "configs"), "--data-root", str(tmp_path / "data")]


def _run(tmp_path: Path, benchmark: str, *extra: str) -> RunFiles:
    out = tmp_path / f"{benchmark}-run"
    argv = ["rollouts", "--benchmark", benchmark, "--harness", "simple_agent", "--out", str(out)]
    main([*argv, *extra, *_flags(tmp_path)])
    return RunFiles(out)


def _reverify(tmp_path: Path, run: RunFiles, *extra: str) -> int:
    return main(["rollouts", "reverify", "--run", str(run.out_dir), *extra, *_flags(tmp_path)])


def _rewrite(path: Path, edit) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        edit(row)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.mark.parametrize("benchmark", ["units", "arith"])  # materialized tasks, flat rows
def test_unchanged_verifiers_reproduce_the_records_byte_for_byte(tmp_path, capsys, benchmark):
    run = _run(tmp_path, benchmark, "--limit", "4", "--corrupt-fraction", "0.5", "--seed", "2")
    before = {path: path.read_bytes() for path in run.outputs()}
    assert _reverify(tmp_path, run) == 0
    out = RunFiles(default_out(run.out_dir))
    assert out.out_dir == tmp_path / f"{benchmark}-run-reverified"
    assert out.records.read_bytes() == run.records.read_bytes()
    assert (out.out_dir / "reward_diff.jsonl").read_bytes() == b""
    summary = json.loads((out.out_dir / "reverify_summary.json").read_text())
    assert (summary["records"], summary["rescored"], summary["changed"]) == (4, 4, 0)
    assert summary["before"] == summary["after"] and summary["kept"] == {}
    assert summary["after"]["mean/reward"] == 0.5  # two of four answered wrongly
    assert json.loads(out.aggregate_metrics.read_text()) == json.loads(
        run.aggregate_metrics.read_text()
    )
    assert out.materialized_inputs.read_bytes() == run.materialized_inputs.read_bytes()
    assert {path: path.read_bytes() for path in run.outputs()} == before  # the run untouched
    printed = capsys.readouterr().out
    assert "re-scored 4 of 4 records" in printed and "0 rewards changed" in printed


def test_a_grade_from_another_verifier_is_replaced_and_diffed(tmp_path, capsys):
    run = _run(tmp_path, "units", "--limit", "3")
    original = run.records.read_bytes()
    stale = {0: 0.0, 2: 0.25}  # task index -> the grade an earlier verifier saved

    def regrade(record):
        if record["_ng_task_index"] in stale:
            record["reward"] = stale[record["_ng_task_index"]]
        if record["_ng_task_index"] == 2:
            record["mask_sample"] = True

    _rewrite(run.records, regrade)
    assert _reverify(tmp_path, run, "--out", str(tmp_path / "again")) == 0
    out = RunFiles(tmp_path / "again")
    assert [json.loads(r) for r in out.records.read_bytes().splitlines()] == [
        json.loads(r) for r in original.splitlines()
    ]
    # the diff follows the run's records, which are in finishing order
    diff = sorted(read_jsonl(out.out_dir / "reward_diff.jsonl"), key=lambda d: d["_ng_task_index"])
    assert [(d["_ng_task_index"], d["reward_before"], d["reward_after"]) for d in diff] == sorted(
        (task, grade, 1.0) for task, grade in stale.items()
    )
    assert [d["reward_delta"] for d in diff] == [1.0, 0.75]
    assert [(d["mask_sample_before"], d["mask_sample_after"]) for d in diff] == [
        (False, False),
        (True, False),
    ]
    assert diff[0]["_ng_task_id"] == {"taskset": "units", "task_id": "units-001"}
    summary = json.loads((out.out_dir / "reverify_summary.json").read_text())
    assert (summary["changed"], summary["tasks_changed"]) == (2, 2)
    assert summary["before"]["outcomes"]["masked"] == 1 and summary["after"]["mean/reward"] == 1.0
    printed = capsys.readouterr().out
    assert "units-001 #0: 0.000 -> 1.000 (+1.000)" in printed
    assert "mask_sample True -> False" in printed


def test_records_of_failed_model_calls_are_kept_as_they_are(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"error": 400, "times": 10, "message": "bad request"}]))
    run = _run(tmp_path, "units", "--limit", "2", "--upstream", "scripted", "--script", str(script))
    assert _reverify(tmp_path, run) == 0
    out = RunFiles(default_out(run.out_dir))
    assert out.records.read_bytes() == run.records.read_bytes()
    assert out.failures.read_bytes() == run.failures.read_bytes()
    summary = json.loads((out.out_dir / "reverify_summary.json").read_text())
    assert (summary["rescored"], summary["kept"], summary["changed"]) == (
        0,
        {"scored_by_failure": 2},
        0,
    )


def test_a_verifier_grading_the_session_keeps_its_records(tmp_path, capsys):
    """support_desk grades the action the bot took through a tool, in the episode's session:
    a saved record cannot replay it, so reverify keeps the record (a fresh session would
    grade every dialogue 0)."""
    run = _run(tmp_path, "support_dialogue", "--limit", "2")
    capsys.readouterr()
    assert _reverify(tmp_path, run) == 0
    out = RunFiles(default_out(run.out_dir))
    assert out.records.read_bytes() == run.records.read_bytes()
    summary = json.loads((out.out_dir / "reverify_summary.json").read_text())
    assert summary["kept"] == {"grades_session_state": 2} and summary["rescored"] == 0
    assert summary["after"]["mean/reward"] == 1.0
    assert "kept as they were: 2 (the verifier grades what the episode did" in (
        capsys.readouterr().out
    )


def test_the_run_is_never_the_output(tmp_path, capsys):
    run = _run(tmp_path, "units", "--limit", "1")
    before = run.records.read_bytes()
    for out in (run.out_dir, run.out_dir / "inside", tmp_path):
        assert _reverify(tmp_path, run, "--out", str(out)) == 1
        assert "never writes over the run" in capsys.readouterr().err
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert _reverify(tmp_path, run, "--out", str(foreign)) == 1
    assert (foreign / "notes.txt").read_text() == "mine"
    assert run.records.read_bytes() == before
    # A previous reverify of the run is ours, and is replaced.
    assert _reverify(tmp_path, run) == 0
    assert _reverify(tmp_path, run) == 0


def test_a_directory_that_is_not_a_run_is_refused(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert _reverify(tmp_path, RunFiles(tmp_path / "empty")) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "not a rollouts run" in err and "Traceback" not in err


def test_humaneval_is_verified_in_the_sandbox_and_its_workers_end_with_reverify(tmp_path):
    run = _run(tmp_path, "humaneval", "--limit", "3", "--corrupt-fraction", "0.34", "--seed", "1")
    _rewrite(run.records, lambda record: record.update(reward=0.5))
    catalog = load_catalog(Workspace(REPO / "configs", tmp_path / "data"))
    result = reverify_run(catalog, run.out_dir, tmp_path / "he")
    assert psutil.Process().children(recursive=True) == []
    records = list(read_jsonl(RunFiles(tmp_path / "he").records))
    assert [r["reward"] for r in records].count(1.0) == 2 and result.changed == 3
    assert {r["sandbox"] for r in records} == {"bwrap"}
    assert {r["test_result"] for r in records if r["reward"] == 1.0} == {"passed"}


@pytest.mark.parametrize(
    "argv",
    [
        ["rollouts", "--harness", "simple_agent", "--out", "x"],  # a run needs --benchmark
        ["rollouts", "reverify"],  # and reverify --run
        ["rollouts", "reverify", "--run", "x", "--concurrency", "0"],
    ],
)
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "required" in capsys.readouterr().err or "--concurrency" in " ".join(argv)


def test_a_record_without_its_input_is_refused_and_nothing_is_published(tmp_path, capsys):
    run = _run(tmp_path, "units", "--limit", "2")
    _rewrite(run.records, lambda record: record.update(_ng_rollout_index=7))
    # records are in finishing order: the refusal names whichever is first
    first_task = next(iter(read_jsonl(run.records)))["_ng_task_index"]
    assert _reverify(tmp_path, run) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    expected = f"error: {run.records}: holds a row for rollout ({first_task}, 7), which the run "
    assert err.startswith(expected + "did not plan: the file was edited or joined with another")
    assert not default_out(run.out_dir).exists()
    assert [p.name for p in tmp_path.iterdir() if "reverified" in p.name] == []


def test_a_verifier_that_raises_masks_its_record_and_reverify_goes_on(tmp_path, monkeypatch):
    run = _run(tmp_path, "units", "--limit", "2")
    verify = reverify.verify_answer

    async def break_first(resources, task_input, record, purpose):  # task 0's grader crashes
        if record["_ng_task_index"] == 0:
            raise RuntimeError("the verifier fell over")
        return await verify(resources, task_input, record, purpose)

    monkeypatch.setattr(reverify, "verify_answer", break_first)
    assert _reverify(tmp_path, run) == 0
    records = list(read_jsonl(RunFiles(default_out(run.out_dir)).records))
    first, second = sorted(records, key=lambda record: record["_ng_task_index"])
    assert (first["mask_sample"], first["failure_kind"], first["reward"]) == (
        True,
        "verifier_error",
        0.0,
    )
    assert first["failure_reason"].startswith("reverify: RuntimeError")
    assert first["evaluation_completed"] is False
    assert (second["mask_sample"], second["reward"]) == (False, 1.0)
    (change,) = read_jsonl(default_out(run.out_dir) / "reward_diff.jsonl")
    assert (change["_ng_task_index"], change["reward_delta"]) == (0, -1.0)


def test_an_input_the_plan_does_not_pin_is_not_regraded(tmp_path, capsys):
    """The inventory's digest in the manifest catches an edited input; an input that still
    departs from the run's plan (both edited together) is refused as well."""
    run = _run(tmp_path, "units", "--limit", "2")

    def edit(row):
        row["task_input"]["task_data"]["expected_answer"] = "whatever the model said"

    _rewrite(run.materialized_inputs, edit)
    manifest = json.loads(run.manifest.read_text())
    manifest["inventory_sha256"] = hashlib.sha256(run.materialized_inputs.read_bytes()).hexdigest()
    run.manifest.write_text(json.dumps(manifest))
    capsys.readouterr()
    assert _reverify(tmp_path, run) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {run.materialized_inputs}: task units-001 (taskset units) input")
    assert err.endswith("; reverify re-grades only the inputs the run's plan pins\n")
    assert not default_out(run.out_dir).exists()
