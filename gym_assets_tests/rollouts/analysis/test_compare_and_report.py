"""Statistics, ``rollouts compare`` and the HTML report on real runs (reference upstream).

Run A and run B collect the bundled ``units`` benchmark with different corruption seeds (so
rewards change both ways); between them task 0's input is edited (B runs it with
``--allow-plan-drift``), and B runs two more tasks. What compare reports is checked against
the two runs' own records.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gym_assets.cli import main
from gym_assets.rollouts.analysis import publish
from gym_assets.rollouts.analysis.compare import compare_tables
from gym_assets.rollouts.analysis.estimates import run_statistics
from gym_assets.rollouts.analysis.history import KEEP, snapshots, write_snapshot
from gym_assets.rollouts.analysis.report import ReportInput, render
from gym_assets.rollouts.analysis.tables import (
    iter_table_rows,
    pass_at_k_columns,
    run_table,
    table_rows,
    task_table,
    with_pass_at_k,
)
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl
from gym_assets.rollouts.collection.manifest import read_run
from gym_assets.rollouts.collection.metrics import pass_at_k_estimate, summarize
from gym_assets.rollouts.collection.planned import Planned

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
NETWORK_REFERENCE = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:[a-z]+:)?//""", re.IGNORECASE)


def _run(data: Path, out: Path, *argv: str) -> None:
    code = main(
        ["rollouts", "--benchmark", "units", "--harness", "simple_agent", "--out", str(out),
         *argv, "--configs", str(REPO / "configs"), "--data-root", str(data)]
    )  # fmt: skip
    assert code == 0


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("compare")
    data = root / "data"
    _run(data, root / "a", "--limit", "8", "--corrupt-fraction", "0.5", "--seed", "1")
    taskset = data / "tasksets" / "units" / "benchmark.jsonl"
    rows = [json.loads(line) for line in taskset.read_text().splitlines()]
    rows[0]["task_input"]["task_data"]["expected_answer"] = "changed"
    taskset.write_text("".join(json.dumps(row) + "\n" for row in rows))
    _run(data, root / "b", "--limit", "10", "--corrupt-fraction", "0.5", "--seed", "2",
         "--allow-plan-drift")  # fmt: skip
    return root / "a", root / "b"


def _passes(run: Path) -> dict[int, bool]:
    return {r["_ng_task_index"]: r["reward"] >= 1 for r in read_jsonl(RunFiles(run).records)}


def test_compare_pairs_by_index_and_digest_and_finds_flips_both_ways(runs):
    a, b = runs
    comparison = compare_tables(run_table(read_run(a)), run_table(read_run(b)))
    before, after = _passes(a), _passes(b)
    common = sorted(set(before) & set(after) - {0})  # task 0's input changed
    to_fail = [t for t in common if before[t] and not after[t]]
    to_pass = [t for t in common if after[t] and not before[t]]
    assert to_fail and to_pass  # the seeds were chosen so that both happen
    assert [t.task_index for t in comparison.flipped_to_fail.tasks] == to_fail
    assert [t.task_index for t in comparison.flipped_to_pass.tasks] == to_pass
    assert comparison.flipped_to_fail.count == len(to_fail)
    assert [t.task_index for t in comparison.inputs_changed.tasks] == [0]
    assert comparison.only_in_a.count == 0
    assert [t.task_index for t in comparison.only_in_b.tasks] == [8, 9]
    assert comparison.paired == len(common) == 7
    deltas = [float(after[t]) - float(before[t]) for t in common]
    delta = comparison.reward_delta
    assert delta.n == 7 and delta.mean == pytest.approx(sum(deltas) / 7)
    assert delta.ci_low <= delta.mean <= delta.ci_high


def test_the_task_table_follows_the_records(runs):
    a, _ = runs
    run = read_run(a)
    table = run_table(run)
    assert set(table["benchmark"]) == {"units"} and set(table["harness"]) == {"simple_agent"}
    assert list(table["task_index"]) == list(range(8))
    assert table["measured"].tolist() == [1] * 8
    passes = _passes(a)
    assert table["passes"].tolist() == [int(passes[t]) for t in range(8)]
    totals = summarize((item.key for item in run.inputs), run.records, run.failures)
    assert run_statistics(table).reward.mean == pytest.approx(totals.reward_mean)
    assert run_statistics(table).pass_at_k["pass@1"].mean == pytest.approx(totals.pass_at_1)
    aggregate = json.loads(RunFiles(a).aggregate_metrics.read_text())
    block = aggregate[0]["statistics"]
    assert block["reward"]["mean"] == pytest.approx(totals.reward_mean)
    assert block["tasks"] == 8 and block["bootstrap"]["resamples"] == 2000


def _compare_cli(capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = main(["rollouts", "compare", *(str(a) for a in argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_compare_command_prints_text_and_json(runs, capsys):
    a, b = runs
    code, out, _ = _compare_cli(capsys, a, b)
    assert code == 0
    assert "tasks: 8 in A, 10 in B, 7 paired (same task index and input digest)" in out
    assert re.search(r"reward difference \(B − A\) -?\d\.\d{3} ± \d\.\d{3} \(95% CI ", out)
    assert "inputs changed (not comparable): 1\n  task 0 (units-001): sha256:" in out
    assert "only in B: 2\n  task 8 (units-009)\n  task 9 (units-010)" in out
    code, out, _ = _compare_cli(capsys, a, b, "--json")
    document = json.loads(out)
    assert code == 0 and document["b"] == str(b) and document["paired"] == 7
    assert document["inputs_changed"]["tasks"][0]["task_index"] == 0
    assert document["only_in_b"]["count"] == 2


def test_the_compare_command_refuses_what_is_no_run(runs, tmp_path, capsys):
    a, _ = runs
    refusals = ((tmp_path / "missing", "no such directory"), (tmp_path, "not a rollouts run"))
    for other, words in refusals:
        code, out, err = _compare_cli(capsys, a, other)
        assert code == 1 and out == ""
        assert err.count("\n") == 1 and err.startswith(f"error: {other}: ") and words in err
    with pytest.raises(SystemExit) as usage:
        main(["rollouts", "compare", str(a)])
    assert usage.value.code == 2


def test_the_report_is_self_contained_and_its_links_open(runs):
    _, b = runs
    page = RunFiles(b).report.read_text(encoding="utf-8")
    assert page.count("<svg") == 1  # the reward plot; no failures to plot
    assert NETWORK_REFERENCE.search(page) is None and "<script" not in page
    assert "No previous run to compare" in page
    hrefs = re.findall(r'<a href="([^"]+)"', page)
    assert len(hrefs) == 10
    for href in hrefs:
        record = json.loads((b / href).read_text(encoding="utf-8"))
        task, rollout = re.fullmatch(r"report/(\d+)-(\d+)\.json", href).groups()
        assert (record["_ng_task_index"], record["_ng_rollout_index"]) == (int(task), int(rollout))


def test_a_report_of_many_tasks_lists_the_lowest_scoring_with_their_files(tmp_path, monkeypatch):
    monkeypatch.setattr(publish, "REPORT_TASKS", 4)
    out = tmp_path / "run"
    _run(tmp_path / "data", out, "--limit", "10", "--repeats", "2", "--corrupt-fraction", "0.3")
    table = run_table(read_run(out))
    assert len(table) == 10  # more tasks than the report lists
    lowest = publish.lowest_first(table).head(4)
    listed = sorted(int(task) for task in lowest["task_index"])
    others = table[~table["task_index"].isin(listed)]
    assert lowest["reward_mean"].max() <= others["reward_mean"].min()  # the worst, not any four
    assert lowest["reward_mean"].min() < 1  # some were answered wrongly
    page = RunFiles(out).report.read_text(encoding="utf-8")
    assert "The 4 tasks with the lowest mean reward (unmeasured first) of the run's 10" in page
    hrefs = re.findall(r'<a href="([^"]+)"', page)
    assert sorted(hrefs) == [
        f"report/{task}-{rollout}.json" for task in listed for rollout in (0, 1)
    ]
    files = sorted(path.name for path in RunFiles(out).report_dir.glob("[0-9]*-*.json"))
    assert files == sorted(href.removeprefix("report/") for href in hrefs)  # and no others


def test_the_report_escapes_strings_from_data(runs):
    a, _ = runs
    run = read_run(a)
    inputs, records, failures = run.inputs, run.records, run.failures
    table = task_table(Planned.of(inputs), records, failures, benchmark="units", harness="<b>h</b>")
    hostile = '--><script>alert("task")</script>'
    table.loc[0, "task_id"] = hostile
    totals = summarize((item.key for item in inputs), records, failures)
    totals = type(totals)(**{**totals.__dict__, "failure_kinds": {hostile: 1}})
    page = render(
        ReportInput("units", "<b>h</b>", totals, run_statistics(table), table, {}, None, None)
    )
    assert hostile not in page and "<b>h</b>" not in page and "<script" not in page
    assert "&lt;script&gt;alert(&quot;task&quot;)&lt;/script&gt;" in page
    assert page.count("<svg") == 2  # the failure kinds are drawn (as paths, not text)


def test_the_same_run_gives_the_same_report_bytes(tmp_path):
    data = tmp_path / "data"
    _run(data, tmp_path / "first", "--limit", "5", "--corrupt-fraction", "0.4")
    # The second run in another interpreter: nothing may depend on the process.
    subprocess.run(
        [sys.executable, "-m", "gym_assets.cli", "rollouts", "--benchmark", "units",
         "--harness", "simple_agent", "--out", str(tmp_path / "second"), "--limit", "5",
         "--corrupt-fraction", "0.4", "--configs", str(REPO / "configs"),
         "--data-root", str(data)],
        check=True, capture_output=True,
    )  # fmt: skip
    first = RunFiles(tmp_path / "first").report.read_bytes()
    assert first == RunFiles(tmp_path / "second").report.read_bytes()
    assert b"<svg" in first


def test_a_second_run_in_the_same_dir_is_compared_with_the_first(tmp_path, capsys):
    data, out = tmp_path / "data", tmp_path / "run"
    _run(data, out, "--limit", "6")
    assert "compared with the previous run: no previous run to compare" in capsys.readouterr().out
    _run(data, out, "--limit", "6", "--corrupt-fraction", "0.5")
    printed = capsys.readouterr().out
    assert "compared with the previous run: reward -0.500 ± " in printed
    assert "flipped pass → fail 3, fail → pass 0, inputs changed 0" in printed
    assert re.search(r"^reward mean 0\.500 ± 0\.2\d\d \(95% CI ", printed, re.MULTILINE)
    assert f"report             : {RunFiles(out).report}" in printed
    assert len(snapshots(RunFiles(out))) == 2
    page = RunFiles(out).report.read_text(encoding="utf-8")
    assert "flipped pass → fail: 3" in page and "Against the previous run" in page


def test_history_keeps_the_newest_snapshots_and_only_deletes_its_own(tmp_path):
    from datetime import UTC, datetime, timedelta

    from gym_assets.workspace import Workspace

    files = RunFiles(tmp_path / "run")
    roots = Workspace(configs=REPO / "configs", data=tmp_path)
    table = task_table(Planned.of([]), {}, {}, benchmark="b", harness="h")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    written = [write_snapshot(files, table, roots, start + timedelta(minutes=i)) for i in range(3)]
    (files.history_dir / "notes.txt").write_text("mine")
    for _ in range(KEEP):
        write_snapshot(files, table, roots, start)  # a clock set back still sorts last
    kept = snapshots(files)
    assert len(kept) == KEEP and kept[0] not in written
    assert kept == sorted(kept) and (files.history_dir / "notes.txt").read_text() == "mine"


def test_pass_at_k_with_repeats_matches_the_aggregate_metrics(tmp_path):
    out = tmp_path / "run"
    _run(tmp_path / "data", out, "--limit", "4", "--repeats", "3", "--corrupt-fraction", "0.5")
    entry = json.loads(RunFiles(out).aggregate_metrics.read_text())[0]
    block = entry["statistics"]["pass_at_k"]
    assert sorted(block) == ["pass@1", "pass@2", "pass@3"] == sorted(entry["pass_at_k"])
    for name, value in entry["pass_at_k"].items():
        assert block[name]["mean"] == pytest.approx(value) and block[name]["n"] == 4
    table = run_table(read_run(out))
    assert table["measured"].tolist() == [3] * 4 and table["rollouts"].sum() == 12
    assert entry["statistics"]["reward"]["mean"] == pytest.approx(
        entry["key_metrics"]["mean/reward"]
    )


def test_one_task_no_measured_task_and_a_damaged_snapshot(tmp_path, capsys):
    data = tmp_path / "data"
    _run(data, tmp_path / "one", "--limit", "1")
    assert "reward mean 1.000 (n=1 task: no interval from one task)" in capsys.readouterr().out
    # Every rollout outlives its deadline: nothing is measured (the command exits 1 for that).
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "42"}]))
    none = tmp_path / "none"
    code = main(
        ["rollouts", "--benchmark", "units", "--harness", "simple_agent", "--out", str(none),
         "--limit", "2", "--upstream", "scripted", "--script", str(script),
         "--upstream-latency", "30", "--timeout", "0.2",
         "--configs", str(REPO / "configs"), "--data-root", str(data)]
    )  # fmt: skip
    assert code == 1 and "reward mean n/a (no task measured)" in capsys.readouterr().out
    text = RunFiles(none).aggregate_metrics.read_text()
    assert "NaN" not in text and json.loads(text)[0]["statistics"]["reward"]["mean"] is None
    page = RunFiles(none).report.read_text()
    assert page.count("<svg") == 2  # rewards (none) and the failure kinds
    # A snapshot someone damaged: the next run says so and is not compared with it.
    history = snapshots(RunFiles(tmp_path / "one"))
    history[-1].write_text("not json\n")
    _run(data, tmp_path / "one", "--limit", "1")
    captured = capsys.readouterr()
    assert f"note: {history[-1]}:1: not valid JSON" in captured.err
    assert "no previous run to compare" in captured.out


def test_runs_of_two_benchmarks_are_compared_only_when_asked(runs, tmp_path, capsys):
    a, _ = runs
    other = tmp_path / "arith"
    code = main(
        ["rollouts", "--benchmark", "arith", "--harness", "simple_agent", "--out", str(other),
         "--limit", "2", "--configs", str(REPO / "configs"), "--data-root", str(tmp_path / "d")]
    )  # fmt: skip
    assert code == 0
    capsys.readouterr()
    code, out, err = _compare_cli(capsys, a, other)
    assert code == 1 and out == ""
    assert err == (
        f"error: {a} is a run of benchmark 'units' and {other} of 'arith': their task indexes "
        "name different questions; compare runs of one benchmark, or pass "
        "--allow-different-benchmarks\n"
    )
    code, out, _ = _compare_cli(capsys, a, other, "--allow-different-benchmarks")
    assert code == 0 and "tasks: 8 in A, 2 in B, 0 paired" in out


def test_pass_at_k_of_many_repeats_is_one_frame_and_warns_nothing():
    table = pd.DataFrame({"rollouts": [200, 150], "measured": [200, 150], "passes": [50, 0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pandas warns of a fragmented frame past 100 inserts
        with_k = with_pass_at_k(table)
    assert pass_at_k_columns(with_k) == [f"pass@{k}" for k in range(1, 201)]
    assert with_k.loc[0, "pass@200"] == pass_at_k_estimate(200, 50, 200) == 1.0
    assert with_k.loc[0, "pass@1"] == pytest.approx(0.25) and with_k.loc[1, "pass@150"] == 0.0
    assert np.isnan(with_k.loc[1, "pass@151"])  # fewer rollouts than k: no estimate


def test_a_table_written_a_chunk_at_a_time_is_the_table_written_whole():
    table = pd.DataFrame(
        {
            "task_index": np.arange(5, dtype="int64"),
            "reward_mean": [0.5, np.nan, 1.0, np.nan, 0.0],
            "solved": [True, False, True, False, False],
        }
    )
    rows = list(iter_table_rows(table, chunk=2))
    assert rows == table_rows(table)
    assert rows[1]["reward_mean"] is None and type(rows[4]["task_index"]) is int
