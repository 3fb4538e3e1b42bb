"""Rollouts fanned out over two real Celery workers, and a worker process killed mid-step.

One Postgres instance and one Redis broker of the project's own (``gym_assets.local_services``),
a code server and the daemon (``gym_assets.defs.services``), two ``dagster-celery`` workers
started with the executor's own config file, all on loopback in a throwaway directory. The four
bundled benchmarks are prepared through the run queue, then ``rollouts_job`` runs for all eight
benchmark × harness partitions with ``GYM_ASSETS_EXECUTOR=celery``. While one partition collects
(after some rollouts were recorded), the worker process executing its rollouts step is killed
with SIGKILL: the run fails, Dagster's run retry re-executes it, and the retried step continues
from the ledger. 2.5 to 3 minutes on a 2-core machine.
"""

from __future__ import annotations

import collections
import os
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import dagster as dg
import psutil
import pytest

from gym_assets.defs.demo import RunOutcome
from gym_assets.defs.executors import CELERY_CONFIG
from gym_assets.defs.partitions import BENCHMARK, HARNESS, PARTITION_TAG
from gym_assets.defs.services import dagster_services, wait_for_runs
from gym_assets.local_dagster import LocalHome
from gym_assets.local_services.celery_workers import celery_workers
from gym_assets.process_tree import alive
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl
from gym_assets.rollouts.collection.inputs import ROLLOUT_INDEX, TASK_INDEX
from gym_assets_tests.scale_out.local_servers import (
    REPO,
    SESSION_TAG,
    WORKERS,
    celery_steps,
    home,
    leftovers,
    partition_tags,
    servers,
)

pytestmark = pytest.mark.slow
T = TypeVar("T")

BENCHMARKS = ["arith", "humaneval", "support_dialogue", "units"]
HARNESSES = ["simple_agent", "minimal_agent"]
VICTIM = {BENCHMARK: "arith", HARNESS: "minimal_agent"}
# One rollout at a time, each task twice: the step runs long enough to be killed mid-way.
VICTIM_CONFIG = {"resources": {"harness_runner": {"config": {"concurrency": 1, "repeats": 2}}}}
RUN_TIMEOUT_S = 900.0
RETRY_NUMBER_TAG = "dagster/retry_number"
KILL_AFTER_RECORDS = 5
WAIT_S = 300.0


def _wait(condition: Callable[[], T], what: str, timeout_s: float = WAIT_S) -> T:
    """``condition()`` once it is truthy (polled, failing the test after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return value


def _worker_of_step(instance: dg.DagsterInstance, run_id: str, step: str) -> str:
    """The Celery worker (``name@host``) that took ``step`` of the run, from the engine event
    the Celery task writes when it starts executing it."""
    for hostname, step_key in celery_steps(instance, run_id):
        if step_key == step:
            return hostname
    return ""


def _failure_message(instance: dg.DagsterInstance, run_id: str) -> str:
    """What the run's failure event says, its error included."""
    (entry,) = instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    error = entry.get_dagster_event().job_failure_data.error
    return f"{entry.message} {error.to_string() if error else ''}"


def _task_process(worker: psutil.Process) -> psutil.Process:
    """The pool process of a one-slot worker: ``dagster-celery`` starts ``celery worker``,
    whose single prefork child executes the tasks."""
    (celery,) = worker.children()
    (pool,) = celery.children()
    return pool


def _keys(path: Path) -> list[tuple[int, int]]:
    return [(row[TASK_INDEX], row[ROLLOUT_INDEX]) for row in read_jsonl(path)]


def test_rollouts_fan_out_over_two_workers_and_survive_a_killed_one(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = home(scratch)
    with servers(scratch / "services") as (database, broker, redis):
        env = local.environ() | {
            "DAGSTER_PG_URL": database,
            "GYM_ASSETS_CELERY_BROKER": broker,
            "GYM_ASSETS_EXECUTOR": "celery",
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        with dg.DagsterInstance.get() as instance:
            _fan_out_and_kill(instance, local, scratch / "logs")
    outlived = leftovers(scratch, redis)
    assert not outlived, f"processes of the test outlived it: {outlived}"


def _fan_out_and_kill(instance: dg.DagsterInstance, local: LocalHome, logs: Path) -> None:
    session = {SESSION_TAG: uuid.uuid4().hex[:12]}
    victim_tags = partition_tags(VICTIM)
    files = RunFiles(local.workspace.rollouts_run_dir(VICTIM[BENCHMARK], VICTIM[HARNESS]))
    with (
        dagster_services(("-m", "gym_assets.definitions"), logs) as dagster,
        celery_workers(WORKERS, CELERY_CONFIG, env=os.environ, logs=logs, cwd=REPO) as workers,
    ):
        instance.add_dynamic_partitions(BENCHMARK, BENCHMARKS)
        instance.add_dynamic_partitions(HARNESS, HARNESSES)
        dagster.backfill("benchmark_job", BENCHMARKS, session)
        dagster.start_daemon()
        prepared = list(wait_for_runs(instance, session, len(BENCHMARKS), RUN_TIMEOUT_S))
        assert all(run.status == dg.DagsterRunStatus.SUCCESS for run in prepared)

        dagster.launch("rollouts_job", session | victim_tags, VICTIM_CONFIG)
        # The victim's rollouts step, once it has recorded a few rollouts: kill the process
        # executing it on whichever worker took it.
        victim_filter = dg.RunsFilter(tags=session | victim_tags)
        (victim,) = _wait(lambda: instance.get_runs(victim_filter), "the victim's run")
        _wait(
            lambda: files.records.is_file() and len(_keys(files.records)) >= KILL_AFTER_RECORDS,
            "the victim's first records",
        )
        hostname = _worker_of_step(instance, victim.run_id, "rollouts")
        name = hostname.partition("@")[0]
        assert name in workers, f"the rollouts step ran on {hostname!r}"
        task = _task_process(psutil.Process(workers[name].pid))
        step_tree = [task, *task.children(recursive=True)]
        recorded_before_kill = len(_keys(files.records))
        task.send_signal(signal.SIGKILL)
        # Nothing of the killed step lives on: its model gateway ends when its control pipe
        # closes, sandboxed harness programs die with their parent.
        _wait(lambda: not any(alive(p) for p in step_tree), "the killed step's processes", 60)
        # The other partitions, launched once the victim is dealt with (each launch is a
        # command of a few seconds, which the victim's short step would not wait for).
        for benchmark in BENCHMARKS:
            for harness in HARNESSES:
                keys = {BENCHMARK: benchmark, HARNESS: harness}
                if keys != VICTIM:
                    dagster.launch("rollouts_job", session | partition_tags(keys))

        # Four benchmark runs, eight rollouts runs and the victim's retry.
        runs = list(wait_for_runs(instance, session, len(BENCHMARKS) + 9, RUN_TIMEOUT_S))
        # The killed step's slot of the `rollouts` pool is freed once its run has ended (the
        # monitoring daemon's `free_slots_after_run_end_seconds`); no other slot is left held.
        pool = instance.event_log_storage
        _wait(lambda: not pool.get_concurrency_info("rollouts").claimed_slots, "a free pool", 120)

    by_id = {run.run_id: run for run in runs}
    assert by_id.pop(victim.run_id).status == dg.DagsterRunStatus.FAILURE
    assert "WorkerLostError" in _failure_message(instance, victim.run_id)
    # The daemon's automatic retry (it numbers its retries), of the same partition.
    (retry,) = [run for run in by_id.values() if run.parent_run_id == victim.run_id]
    assert retry.tags[RETRY_NUMBER_TAG] == "1"
    assert retry.tags[PARTITION_TAG] == victim_tags[PARTITION_TAG]
    worker_steps: list[tuple[str, str]] = []
    for run in instance.get_runs():  # the session's runs and any a sensor launched
        on_workers = celery_steps(instance, run.run_id)
        worker_steps += on_workers
        if run.run_id == victim.run_id:
            continue
        if run.job_name not in {"benchmark_job", "rollouts_job"}:
            continue  # the automation's own runs (the scoreboard) follow on their schedule
        if run.job_name == "rollouts_job":  # every step of it ran on a worker
            assert sorted(step for _, step in on_workers) == ["rollouts", "rollouts_checks"]
        outcome = RunOutcome(instance, run)
        assert outcome.ok, f"{run.job_name} {run.tags.get(PARTITION_TAG)}: {run.status}"
        assert outcome.checks and all(passed for _, passed, _ in outcome.checks), outcome.checks
    assert {host.partition("@")[0] for host, _ in worker_steps} == set(WORKERS)

    # The retried step resumed: it dispatched only what the killed one had not recorded, and
    # every planned (task, rollout) has exactly one record.
    resumed = RunOutcome(instance, retry).metadata["rollouts"]
    assert resumed["resumed_from_run"] == victim.run_id
    planned = _keys(files.materialized_inputs)
    recorded = _keys(files.records)
    assert len(planned) == len(set(planned)) == resumed["rollouts"]
    assert collections.Counter(recorded) == collections.Counter(planned)
    assert not files.failures.is_file() or not _keys(files.failures)
    dispatched = resumed["dispatched"]
    assert isinstance(dispatched, int)
    assert 0 < dispatched <= len(planned) - recorded_before_kill
    steps = collections.Counter(host for host, _ in worker_steps)
    print(
        f"\nkilled after {recorded_before_kill} of {len(planned)} rollouts; the retry dispatched "
        f"{dispatched} ({resumed['rollouts_per_second']}/s); steps per worker: "
        f"{dict(sorted(steps.items()))}"
    )
