"""The run directory is a product: a fresh run deletes only the run's own files, and a resume
reads the run's files strictly (a damaged line is refused, or the file moved aside)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gym_assets.errors import OutputError, UserError
from gym_assets.outputs.markers import MARKER_NAME, TASKSET, write_dir_marker
from gym_assets.rollouts.collection.files import CorruptRunFile, RunFiles, read_jsonl
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import run_rollouts
from gym_assets_tests.filesystems import snapshot


def _run(products, out: Path, **options):
    products.plan("units")
    harness = load_harnesses(products.catalog.loaded.data)["simple_agent"]
    return run_rollouts(
        products.catalog,
        "units",
        harness,
        out,
        upstream_config(mode="reference"),
        RunOptions(**options),
    )


def test_read_jsonl_skips_only_a_cut_short_last_line(tmp_path):
    path = tmp_path / "rollouts.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2}\n{"a": 3, "cu')
    assert [row["a"] for row in read_jsonl(path)] == [1, 2]
    for bad in ('{"a": 1,\n', "[1, 2]\n", "\x00\x00\x00\n"):
        path.write_text(f'{{"a": 1}}\n{bad}{{"a": 3}}\n')
        with pytest.raises(CorruptRunFile) as caught:
            list(read_jsonl(path))
        assert caught.value.render().startswith(f"{path}:2: damaged line (not a JSON object)")


def test_a_fresh_run_refuses_a_directory_with_files_a_run_does_not_write(products, tmp_path):
    out = tmp_path / "run"
    _run(products, out, limit=1)
    (out / "notes.txt").write_text("mine")
    before = snapshot(out)
    with pytest.raises(OutputError) as caught:
        _run(products, out, limit=1)
    assert str(caught.value) == (
        f"{out}: holds {out / 'notes.txt'}, which a rollouts run does not write (a run, fresh or "
        "resumed, replaces its own files there and rebuilds report/ whole); move it out of the "
        "run directory or choose another --out"
    )
    assert snapshot(out) == before


@pytest.mark.parametrize("where", ["unmarked", "foreign file"])
def test_captures_must_be_the_runs_own(products, tmp_path, where):
    out = tmp_path / "run"
    _run(products, out, limit=1)
    captures = out / "captures"
    if where == "unmarked":
        (captures / MARKER_NAME).unlink()
    else:
        (captures / "model-weights.bin").write_bytes(b"\0")
    before = snapshot(out)
    with pytest.raises(OutputError, match="which a rollouts run does not write"):
        _run(products, out, limit=1)
    assert snapshot(out) == before


def test_a_fresh_run_replaces_its_own_files_and_keeps_quarantined_ones(products, tmp_path):
    out = tmp_path / "run"
    first = _run(products, out, limit=3)
    files = RunFiles(out)
    (out / "rollouts.jsonl.corrupt-1").write_text("kept for a post-mortem\n")
    (out / ".rollouts.jsonl.abc123.tmp").write_text("a killed writer's temp file\n")
    second = _run(products, out, limit=1)
    assert (first.dispatched, second.dispatched) == (3, 1)
    assert len(list(read_jsonl(files.records))) == 1
    assert sorted(p.name for p in (out / "captures").iterdir()) == [
        MARKER_NAME,
        "0-0.capture.jsonl",
    ]
    assert (out / "rollouts.jsonl.corrupt-1").read_text() == "kept for a post-mortem\n"


def test_a_fresh_run_keeps_history_and_takes_what_a_killed_run_left(products, tmp_path):
    out = tmp_path / "run"
    _run(products, out, limit=2)
    (out / ".report.staging-x1y2").mkdir()  # a rebuild of report/ killed before its swap
    (out / ".history.lock").write_text("4242\n")  # a lock file a killed holder left
    result = _run(products, out, limit=2)
    assert result.analysis.previous is not None and result.analysis.comparison is not None
    assert len(list((out / "history").glob("*.jsonl"))) == 2
    assert sorted(p.name for p in (out / "report").iterdir()) == [
        MARKER_NAME,
        "0-0.json",
        "1-0.json",
    ]
    assert not (out / ".report.staging-x1y2").exists()  # swept by the rebuild


@pytest.mark.parametrize("name", ["report", "history"])
def test_report_and_history_must_be_the_runs_own(products, tmp_path, name):
    out = tmp_path / "run"
    _run(products, out, limit=1)
    (out / name / MARKER_NAME).unlink()
    before = snapshot(out)
    with pytest.raises(OutputError, match=f"holds {out / name}, which a rollouts run does not"):
        _run(products, out, limit=1)
    assert snapshot(out) == before


def test_a_run_refuses_a_product_of_another_kind(products, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    write_dir_marker(out, TASKSET)
    with pytest.raises(OutputError, match="holds a taskset, not a rollouts run"):
        _run(products, out, limit=1)


def _damage_line(path: Path, number: int) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines[number - 1] = '{"_ng_task_index": 1, "reward": \n'
    path.write_text("".join(lines))


def test_a_resume_refuses_a_damaged_line_with_its_file_and_line(products, tmp_path):
    out = tmp_path / "run"
    _run(products, out, limit=3)
    files = RunFiles(out)
    _damage_line(files.records, 2)
    before = snapshot(out)
    with pytest.raises(CorruptRunFile) as caught:
        _run(products, out, resume=True)
    assert caught.value.render().startswith(f"{files.records}:2: damaged line")
    assert snapshot(out) == before


def test_a_resume_can_move_a_damaged_file_aside_and_rerun_its_rollouts(products, tmp_path):
    out = tmp_path / "run"
    _run(products, out, limit=3)
    files = RunFiles(out)
    _damage_line(files.records, 2)
    damaged = files.records.read_bytes()
    resumed = _run(products, out, resume=True, quarantine_corrupt=True)
    moved = out / "rollouts.jsonl.corrupt-1"
    assert moved.read_bytes() == damaged
    assert resumed.notes[0] == (
        f"{files.records}:2: damaged line; moved the file to rollouts.jsonl.corrupt-1 (its "
        "rollouts run again)"
    )
    assert resumed.dispatched == 3
    assert sorted(r["_ng_task_index"] for r in read_jsonl(files.records)) == [0, 1, 2]
    assert json.loads(files.aggregate_metrics.read_text())[0]["reward_histogram"]


def test_a_resume_takes_the_runs_own_settings_and_refuses_others(products, tmp_path):
    out = tmp_path / "run"
    _run(products, out, limit=2)
    assert _run(products, out, resume=True, limit=2).rollouts == 2  # the same, said again
    before = snapshot(out)
    with pytest.raises(UserError) as caught:
        _run(products, out, resume=True, limit=3, allow_plan_drift=True)
    assert caught.value.render() == (
        f"{out}: cannot resume: the run differs from what is asked: limit 2 (the run) vs 3 "
        "(now); allow plan drift false (the run) vs true (now); resume with the run's own "
        "benchmark, harness, plan, configs and settings, or start a fresh run (without "
        "--resume, or in another --out)"
    )
    assert snapshot(out) == before


@pytest.mark.parametrize("damage", ["missing", "a count as text"])
def test_a_resume_of_a_run_without_a_readable_manifest_is_refused(products, tmp_path, damage):
    out = tmp_path / "run"
    _run(products, out, limit=1)
    manifest = RunFiles(out).manifest
    if damage == "missing":
        manifest.unlink()
    else:
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "rollouts": "1"}))
    with pytest.raises(UserError, match=r"rollouts_manifest\.json: no readable run manifest"):
        _run(products, out, resume=True)
