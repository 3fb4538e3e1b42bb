"""``gym-assets rollouts``: exit codes, the summary, and a run killed with SIGKILL then resumed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from gym_assets.cli import main
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl
from gym_assets_tests.loopback_http import serving

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def _cli(data: Path, *argv: str | Path) -> int:
    args = ["rollouts", *(str(a) for a in argv)]
    return main([*args, "--configs", str(REPO / "configs"), "--data-root", str(data)])


def _script(tmp_path: Path, steps: list[dict]) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(steps))
    return path


def test_a_run_makes_missing_products_and_prints_a_summary(data, tmp_path, capsys):
    out = tmp_path / "run"
    code = _cli(data, "--benchmark", "units", "--harness", "simple_agent", "--out", out,
                "--limit", "4", "--repeats", "2")  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "collating units" in captured.err and "planning units" in captured.err
    assert "rollouts 8/8 (100%)" in captured.err and "failures 0" in captured.err
    header, row = captured.out.splitlines()[:2]
    assert header.split()[:3] == ["rollouts", "measured", "masked"]
    assert row.split() == ["8", "8", "0", "0", "0", "0", "1.000", "1.000"]
    assert str(RunFiles(out).records) in captured.out


def test_refusals_exit_1_with_one_error_line(data, tmp_path, capsys):
    for argv in (
        ["--benchmark", "nope", "--harness", "simple_agent"],
        ["--benchmark", "units", "--harness", "nope"],
    ):
        assert _cli(data, *argv, "--out", tmp_path / "x") == 1
        err = capsys.readouterr().err.splitlines()
        assert err[-1].startswith("error: ") and "Traceback" not in "\n".join(err)


@pytest.mark.parametrize("name", ["units", "arith"])  # a native and a legacy (flat) server
def test_a_run_where_nothing_produced_a_result_exits_1(data, tmp_path, capsys, name):
    # Every rollout outlives its deadline (each answer takes 30 s, the deadline is 0.2 s) before
    # the endpoint answered: the endpoint's failure (ours, retried), not the model's, so a
    # failure without a record, unlike a model call the endpoint refused.
    script = _script(tmp_path, [{"text": "42"}])
    code = _cli(
        data, "--benchmark", name, "--harness", "simple_agent", "--out", tmp_path / "run",
        "--limit", "2", "--upstream", "scripted", "--script", script,
        "--upstream-latency", "30", "--timeout", "0.2",
    )  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err
    assert "none of the 2 dispatched rollouts produced a result" in err
    rows = list(read_jsonl(RunFiles(tmp_path / "run").failures))
    assert [r["_ng_failure_class"] for r in rows] == ["agent_request_failed"] * 2
    assert all(r["_ng_failure_terminal"] is False and "reward" not in r for r in rows)
    assert list(read_jsonl(RunFiles(tmp_path / "run").records)) == []


class _LongAnswers(BaseHTTPRequestHandler):
    """A model server whose every answer is 4 KiB."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "4096")
        self.end_headers()
        self.wfile.write(b" " * 4096)

    def log_message(self, *args: object) -> None:
        pass


def test_an_answer_over_the_cap_ends_the_run_with_a_hint_on_its_flag(
    data, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("GYM_ASSETS_TEST_KEY", "sk-test")
    with serving(_LongAnswers) as port:
        code = _cli(
            data, "--benchmark", "units", "--harness", "simple_agent", "--out", tmp_path / "run",
            "--limit", "2", "--upstream", "openai", "--base-url", f"http://127.0.0.1:{port}/v1",
            "--api-key-env", "GYM_ASSETS_TEST_KEY", "--max-answer-bytes", "1024",
        )  # fmt: skip
    assert code == 1
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "none of the 2 dispatched rollouts produced a result" in error
    assert "answered more than --max-answer-bytes (1,024) allows: raise it" in error


def test_a_request_over_the_cap_scores_0_with_a_hint_on_its_flag(data, tmp_path, capsys):
    script = _script(tmp_path, [{"text": "42"}])
    code = _cli(
        data, "--benchmark", "units", "--harness", "simple_agent", "--out", tmp_path / "run",
        "--limit", "2", "--upstream", "scripted", "--script", script,
        "--max-request-bytes", "64",
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0  # the model's doing: measured, scored 0
    assert "0 by model fault: agent_request_too_large 2" in captured.out
    assert (
        "note: agent_request_too_large rollouts scored 0 as the model's doing: their "
        "conversations grew past --max-request-bytes (64)"
    ) in captured.err


@pytest.mark.parametrize(
    "extra",
    [
        ["--concurrency", "0"],
        ["--upstream", "scripted"],  # needs --script
        ["--base-url", "http://127.0.0.1:1/v1"],  # only with --upstream openai
        ["--upstream", "openai", "--base-url", "http://127.0.0.1:1/v1"],  # and --api-key-env
        ["--corrupt-fraction", "1.5"],
        ["--upstream", "openai", "--base-url", "http://x/v1", "--api-key-env", "sk-123"],
        ["--upstream-api", "chat"],  # only with --upstream openai
        [
            "--upstream",
            "openai",
            "--base-url",
            "http://x/v1",
            "--api-key-env",
            "K",
            "--upstream-api",
            "xml",
        ],
    ],
)
def test_usage_errors_exit_2(data, tmp_path, extra):
    with pytest.raises(SystemExit) as exit_:
        _cli(data, "--benchmark", "units", "--harness", "simple_agent", "--out", tmp_path, *extra)
    assert exit_.value.code == 2


def _progress(stderr_lines: list[str]) -> int:
    """Rollouts done by the last ``rollouts N/TOTAL ...`` progress line."""
    done = [line.split()[1] for line in stderr_lines if line.startswith("rollouts ")]
    return int(done[-1].split("/")[0]) if done else 0


def _records_written(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def _slow_run(data: Path, tmp_path: Path, **popen: Any) -> tuple[list[str], subprocess.Popen]:
    """A run of 60 rollouts at 0.15 s a model call, and the same command without the latency
    (for a resume); the run is let go once 10 rollouts are written."""
    script = _script(tmp_path, [{"text": "42"}])
    argv = [sys.executable, "-m", "gym_assets.cli", "rollouts", "--benchmark", "units",
            "--harness", "simple_agent", "--out", str(tmp_path / "run"), "--upstream", "scripted",
            "--script", str(script), "--repeats", "2", "--concurrency", "4",
            "--configs", str(REPO / "configs"), "--data-root", str(data)]  # fmt: skip
    slow = subprocess.Popen(
        [*argv, "--upstream-latency", "0.15"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        **popen,
    )
    assert slow.stderr is not None
    seen: list[str] = []
    while _progress(seen) < 10:  # a progress line is printed once its rollouts are written
        line = slow.stderr.readline()
        assert line, f"the run ended before 10 rollouts: {''.join(seen)}"
        seen.append(line)
    return argv, slow


def test_sigkill_midway_then_resume_loses_and_duplicates_nothing(data, tmp_path):
    argv, slow = _slow_run(data, tmp_path)
    os.kill(slow.pid, signal.SIGKILL)
    slow.wait()
    assert slow.stderr is not None
    assert slow.returncode == -signal.SIGKILL, slow.stderr.read()
    slow.stderr.close()
    out = tmp_path / "run"
    records = RunFiles(out).records
    done_before = _records_written(records)
    assert 10 <= done_before < 60

    resumed = subprocess.run([*argv, "--resume"], capture_output=True, text=True, cwd=REPO)
    assert resumed.returncode == 0, resumed.stderr
    keys = Counter((r["_ng_task_index"], r["_ng_rollout_index"]) for r in read_jsonl(records))
    expected = {(task, rollout) for task in range(30) for rollout in range(2)}
    assert set(keys) == expected  # nothing missing
    assert max(keys.values()) == 1  # nothing twice
    assert not list(read_jsonl(RunFiles(out).failures))
    assert resumed.stdout.splitlines()[1].split()[:2] == ["60", "60"]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a shell's background job may ignore it


def test_ctrl_c_stops_the_run_and_its_gateway_with_every_capture_whole(data, tmp_path):
    _, slow = _slow_run(data, tmp_path, start_new_session=True, preexec_fn=_default_sigint)
    os.killpg(slow.pid, signal.SIGINT)  # what Ctrl-C sends: the whole process group
    _, stderr = slow.communicate(timeout=120)
    assert slow.returncode == 130, stderr
    assert stderr.rstrip().endswith("interrupted") and "Traceback" not in stderr
    with pytest.raises(ProcessLookupError):  # the gateway child went with the run
        os.killpg(slow.pid, 0)
    files = RunFiles(tmp_path / "run")
    assert not list(files.capture_dir.glob("*.incomplete"))
    captures = sorted(files.capture_dir.glob("*.capture.jsonl"))
    assert len(captures) >= len(list(read_jsonl(files.records))) >= 10
    for capture in captures:  # the rollouts cut short too: their lines were written whole
        assert all(json.loads(line) for line in capture.read_text().splitlines())


def test_a_run_after_a_row_was_edited_runs_the_new_row(tmp_path, capsys):
    """The products are rebuilt from the edited row (said on stderr) and the run uses it;
    --no-rebuild refuses instead, and so does a data root built from another configs tree."""
    configs = tmp_path / "configs"
    shutil.copytree(REPO / "configs", configs)
    data = tmp_path / "data"

    def run(out: str, *extra: str, tree: Path = configs) -> tuple[int, str]:
        argv = ["rollouts", "--benchmark", "units", "--harness", "simple_agent", "--limit", "1"]
        argv += ["--out", str(tmp_path / out), *extra]
        code = main([*argv, "--configs", str(tree), "--data-root", str(data)])
        return code, capsys.readouterr().err

    code, err = run("first")
    assert code == 0, err
    rows = configs / "benchmarks" / "units" / "units.jsonl"
    text = rows.read_text("utf-8")
    for old, new in (("Convert 168 kilometres", "Convert 169 kilometres"), ("168000", "169000")):
        text = text.replace(old, new)
    rows.write_text(text, "utf-8")
    code, err = run("refused", "--no-rebuild")
    assert code == 1
    assert err.splitlines()[-1] == (
        f"error: units: stale taskset in {data / 'tasksets' / 'units'} (rows changed); run "
        "without --no-rebuild to rebuild"
    )
    code, err = run("second")
    assert code == 0, err
    assert "units: taskset rebuilt: rows changed" in err
    assert "units: plan rebuilt: rows changed" in err
    inputs = (tmp_path / "second" / "rollouts_materialized_inputs.jsonl").read_text("utf-8")
    assert "Convert 169 kilometres" in inputs and "Convert 168 kilometres" not in inputs
    records = list(read_jsonl(RunFiles(tmp_path / "second").records))
    assert [r["reward"] for r in records] == [1.0]
    other = tmp_path / "other"
    shutil.copytree(configs, other)
    code, err = run("mixed", "--no-rebuild", tree=other)
    assert code == 1
    assert f"built from configs root {configs}, not {other}" in err.splitlines()[-1]


def test_a_resume_continues_with_the_runs_own_drift_setting(data, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ("--benchmark", "units", "--harness", "simple_agent", "--out", out, "--limit", "2")
    assert _cli(data, *argv) == 0
    taskset = data / "tasksets" / "units" / "benchmark.jsonl"
    rows = [json.loads(line) for line in taskset.read_text().splitlines()]
    rows[0]["task_input"]["task_data"]["expected_answer"] = "changed"
    taskset.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert _cli(data, *argv, "--allow-plan-drift") == 0
    RunFiles(out).records.write_text("")  # as if killed before any rollout finished
    capsys.readouterr()
    assert _cli(data, *argv, "--resume") == 0
    err = capsys.readouterr().err
    assert "1 tasks differ from the plan; dispatched anyway (--allow-plan-drift)" in err
    assert len(list(read_jsonl(RunFiles(out).records))) == 2
