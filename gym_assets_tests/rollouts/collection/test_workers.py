"""A run's rollouts on worker processes: the same products as one process, and a worker
killed mid-run loses and duplicates nothing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gym_assets.rollouts.collection.files import RunFiles, read_jsonl
from gym_assets.rollouts.collection.inputs import RolloutInput
from gym_assets.rollouts.collection.workers import (
    MAX_LOSSES,
    run_in_workers,
    shares,
    worker_count,
)
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import RunResult, run_rollouts

REPO = Path(__file__).resolve().parents[3]
WORKER_MODULE = b"gym_assets.rollouts.collection.workers"
# What differs between two runs of the same plan whoever runs them: clock readings, and the
# ids each gateway mints (a random prefix and its own counter).
TIMINGS = {"created_at", "started_at", "completed_at", "timestamp", "duration_ms"}
TIMINGS |= {"latency_total_ms"}
MINTED_ID = re.compile(r"[0-9a-f]{24}")
UNITS = {(task, rollout) for task in range(30) for rollout in range(2)}


def _run(products, out: Path, latency_s: float = 0.0, **options: Any) -> RunResult:
    products.plan("units")
    harness = load_harnesses(products.catalog.loaded.data)["simple_agent"]
    with open(os.devnull, "w") as quiet:
        return run_rollouts(
            products.catalog,
            "units",
            harness,
            out,
            upstream_config(mode="reference", latency_s=latency_s),
            RunOptions(repeats=2, **options),
            progress_stream=quiet,
        )


def _comparable(value: Any, ids: dict[str, int]) -> Any:
    if isinstance(value, dict):
        return {k: None if k in TIMINGS else _comparable(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_comparable(v, ids) for v in value]
    if isinstance(value, str):  # a minted id becomes the order it first appears in its record
        return MINTED_ID.sub(lambda m: f"<{ids.setdefault(m[0], len(ids))}>", value)
    return value


def _records(path: Path) -> list[Any]:
    return [_comparable(record, {}) for record in read_jsonl(path)]


def _keys(path: Path) -> Counter[tuple[int, int]]:
    return Counter((r["_ng_task_index"], r["_ng_rollout_index"]) for r in read_jsonl(path))


def test_two_workers_write_what_one_process_writes(products, tmp_path):
    one = _run(products, tmp_path / "one", concurrency=8, workers=1)
    two = _run(products, tmp_path / "two", concurrency=8, workers=2)
    assert one.dispatched == two.dispatched == 60
    same_bytes = ["rollouts_materialized_inputs.jsonl", "rollouts_failures.jsonl"]
    same_bytes += ["rollouts_aggregate_metrics.json", "rollouts_plan.json", "report.html"]
    for name in same_bytes:
        assert (one.files.out_dir / name).read_bytes() == (two.files.out_dir / name).read_bytes()
    # the records in the same order (by task and rollout, not by when each finished), equal
    # but for the clock and the gateways' minted ids
    assert list(_keys(one.files.records)) == sorted(UNITS)
    assert _records(one.files.records) == _records(two.files.records)
    assert one.totals == two.totals


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _workers(pid: int) -> list[int]:
    """The rollouts workers ``pid`` started."""
    found = []
    for child in _children(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if WORKER_MODULE in command:
            found.append(child)
    return found


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def _wait_for(condition: Any, what: str, timeout_s: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def test_a_worker_killed_mid_run_loses_and_duplicates_no_rollout(products, tmp_path):
    out = tmp_path / "run"
    records = RunFiles(out).records
    result: list[RunResult] = []
    run = threading.Thread(
        target=lambda: result.append(_run(products, out, latency_s=0.3, concurrency=8, workers=2))
    )
    run.start()
    try:
        _wait_for(lambda: records.is_file() and records.read_bytes().count(b"\n") >= 8, "rows")
        victim = _wait_for(lambda: _workers(os.getpid()), "a worker")[0]
        its_gateway = _children(victim)
        assert its_gateway  # the worker's own model gateway
        os.kill(victim, signal.SIGKILL)
    finally:
        run.join(timeout=300)
    (done,) = result
    assert done.dispatched == 60 and done.totals.outcomes.measured == 60
    keys = _keys(records)
    assert set(keys) == UNITS and max(keys.values()) == 1  # nothing lost, nothing twice
    assert not list(read_jsonl(RunFiles(out).failures))
    assert all(_gone(pid) for pid in [victim, *its_gateway])
    assert not _workers(os.getpid())


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a shell's background job may ignore it


def test_ctrl_c_stops_every_worker_and_a_resume_finishes_the_run(tmp_path):
    data, out = tmp_path / "data", tmp_path / "run"
    argv = [sys.executable, "-m", "gym_assets.cli", "rollouts", "--benchmark", "units",
            "--harness", "simple_agent", "--out", str(out), "--repeats", "2",
            "--concurrency", "8", "--workers", "2", "--configs", str(REPO / "configs"),
            "--data-root", str(data)]  # fmt: skip
    slow = subprocess.Popen(
        [*argv, "--upstream-latency", "0.3"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=REPO,
        start_new_session=True,
        preexec_fn=_default_sigint,
    )
    records = RunFiles(out).records

    def written() -> bool:
        assert slow.poll() is None, slow.communicate()[1]
        return records.is_file() and records.read_bytes().count(b"\n") >= 8

    _wait_for(written, "rows")
    workers = _workers(slow.pid)
    assert len(workers) == 2
    gateways = [pid for worker in workers for pid in _children(worker)]
    os.killpg(slow.pid, signal.SIGINT)  # what Ctrl-C sends: the run's group, not the workers'
    _, stderr = slow.communicate(timeout=120)
    assert slow.returncode == 130, stderr
    assert all(_gone(pid) for pid in [*workers, *gateways])
    done_before = sum(_keys(records).values())
    assert 8 <= done_before < 60

    resumed = subprocess.run([*argv, "--resume"], capture_output=True, text=True, cwd=REPO)
    assert resumed.returncode == 0, resumed.stderr
    keys = _keys(records)
    assert set(keys) == UNITS and max(keys.values()) == 1
    assert list(keys) == sorted(UNITS)
    assert not list(read_jsonl(RunFiles(out).failures))
    assert json.loads(RunFiles(out).aggregate_metrics.read_text())


@pytest.mark.parametrize(
    ("requested", "concurrency", "pending", "expected"),
    [
        (None, 16, 1000, 1),  # under 32 in flight: one event loop keeps up
        (2, 16, 1000, 2),  # asked for
        (4, 3, 1000, 3),  # never more than rollouts in flight
        (4, 64, 2, 2),  # or left to run
    ],
)
def test_worker_count(requested, concurrency, pending, expected):
    assert worker_count(requested, concurrency, pending) == expected


def test_the_concurrency_is_split_evenly():
    assert shares(10, 3) == [4, 3, 3] and sum(shares(1024, 2)) == 1024


@pytest.mark.parametrize(
    "module", [WORKER_MODULE.decode(), "gym_assets.rollouts.collection.gateway_process"]
)
def test_worker_and_gateway_processes_start_without_the_openai_sdk(module):
    """Every run starts these per worker: the SDK (~0.5 s) is imported only once a model call
    fails or an answer is translated."""
    probe = f"import sys, {module}; print('openai' in sys.modules)"
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert found.stdout == "False\n"


@dataclass(frozen=True)
class _Deadly:
    """A worker setup (pickled to each worker, so module level) whose attempt of ``deadly``
    kills its own worker and answers every other rollout with one row, naming the task its
    command carried (the setup holds no inventory)."""

    deadly: tuple[int, int]

    @contextlib.asynccontextmanager
    async def attempts(self) -> AsyncIterator[Any]:
        async def attempt(item: RolloutInput, number: int) -> list[dict[str, Any]]:
            if item.key == self.deadly:
                os.kill(os.getpid(), signal.SIGKILL)
            await asyncio.sleep(0.05)
            row = {"_ng_task_index": item.key[0], "_ng_rollout_index": 0, "attempt": number}
            return [{**row, "task": [item.taskset, item.task_id, item.row["text"]]}]

        yield attempt


def test_a_rollout_that_kills_its_workers_becomes_one_worker_lost_row():
    inputs = [
        RolloutInput({"_ng_task_index": n, "_ng_rollout_index": 0, "text": f"é{n}"}, "t", f"id-{n}")
        for n in range(12)
    ]
    kept: list[dict[str, Any]] = []
    lost: list[tuple[tuple[int, int], int, str]] = []

    def lost_row(item: RolloutInput, attempt: int, message: str) -> dict[str, Any]:
        lost.append((item.key, attempt, message))
        return {"_ng_task_index": item.key[0], "_ng_rollout_index": 0, "lost": True}

    todo = [(item, 1) for item in inputs]
    setup = _Deadly(deadly=(5, 0))
    asyncio.run(
        run_in_workers(todo, setup, workers=2, concurrency=2, keep=kept.extend, lost=lost_row)
    )
    assert Counter(row["_ng_task_index"] for row in kept) == Counter(range(12))  # once each
    assert [row for row in kept if row.get("lost")] == [
        {"_ng_task_index": 5, "_ng_rollout_index": 0, "lost": True}
    ]
    assert lost == [((5, 0), 1, f"the worker process running it died {MAX_LOSSES} times")]
    answered = [row for row in kept if not row.get("lost")]
    assert all(row["attempt"] == 1 for row in answered)
    tasks = {row["_ng_task_index"]: row["task"] for row in answered}  # as each command carried
    assert tasks == {n: ["t", f"id-{n}", f"é{n}"] for n in range(12) if n != 5}
    assert not _workers(os.getpid())


@dataclass(frozen=True)
class _Bulky:
    """A worker setup whose every rollout answers one row of ``size`` characters, more than
    a pipe holds, so each reply is written while the run reads it."""

    size: int

    @contextlib.asynccontextmanager
    async def attempts(self) -> AsyncIterator[Any]:
        async def attempt(item: RolloutInput, number: int) -> list[dict[str, Any]]:
            await asyncio.sleep(0.01)
            text = f"{item.task_id}:" + "x" * self.size
            return [{"_ng_task_index": item.key[0], "_ng_rollout_index": 0, "text": text}]

        yield attempt


def _stop_and_continue(until: threading.Event) -> None:
    """Stop and continue every worker of this process, over and over (kill -STOP, -CONT; a
    sampling profiler): a write to a full pipe returns part of what it was given."""
    while not until.is_set():
        for pid in _workers(os.getpid()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
                os.kill(pid, signal.SIGCONT)
        time.sleep(0.001)


def test_replies_stay_whole_when_a_worker_is_stopped_and_continued_mid_write():
    inputs = [
        RolloutInput({"_ng_task_index": n, "_ng_rollout_index": 0}, "t", f"id-{n}")
        for n in range(48)
    ]
    kept: list[dict[str, Any]] = []

    def keep(rows: list[dict[str, Any]]) -> None:
        time.sleep(0.005)  # the run reads behind, so the replies fill the pipe
        kept.extend(rows)

    done = threading.Event()
    stopper = threading.Thread(target=_stop_and_continue, args=(done,))
    stopper.start()
    try:
        asyncio.run(
            run_in_workers(
                [(item, 1) for item in inputs],
                _Bulky(size=200_000),
                workers=2,
                concurrency=8,
                keep=keep,
                lost=lambda item, attempt, message: pytest.fail(message),
            )
        )
    finally:
        done.set()
        stopper.join()
    assert sorted(row["_ng_task_index"] for row in kept) == list(range(48))  # once each
    assert all(row["text"] == f"id-{row['_ng_task_index']}:" + "x" * 200_000 for row in kept)


@dataclass(frozen=True)
class _Noisy:
    """A worker setup whose rollouts start a program that prints to the stdout it inherits."""

    @contextlib.asynccontextmanager
    async def attempts(self) -> AsyncIterator[Any]:
        async def attempt(item: RolloutInput, number: int) -> list[dict[str, Any]]:
            subprocess.run(["echo", f"stray output of {item.task_id}"], check=True)
            return [{"_ng_task_index": item.key[0], "_ng_rollout_index": 0}]

        yield attempt


def test_what_a_worker_s_programs_print_goes_to_stderr_not_the_reply_channel(capfd):
    inputs = [
        RolloutInput({"_ng_task_index": n, "_ng_rollout_index": 0}, "t", f"id-{n}")
        for n in range(6)
    ]
    kept: list[dict[str, Any]] = []
    asyncio.run(
        run_in_workers(
            [(item, 1) for item in inputs],
            _Noisy(),
            workers=2,
            concurrency=2,
            keep=kept.extend,
            lost=lambda item, attempt, message: pytest.fail(message),
        )
    )
    assert sorted(row["_ng_task_index"] for row in kept) == list(range(6))
    assert "stray output of id-3" in capfd.readouterr().err
