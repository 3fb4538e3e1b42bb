"""The run queue on a Postgres instance (dagster.postgres.yaml as shipped): real runs of the
bundled units and arith benchmarks with the simple_agent and minimal_agent harnesses, queued
against a code server and dequeued by the daemon. The instance's own records show that at most
two rollouts steps (pool ``rollouts``) ran at once and that two runs of one partition never
overlapped.

Whether two runs' rollouts steps meet depends on how fast each run process starts, so the model
server (a Chat-only one on loopback) holds every answer until the pool's two slots are both
claimed by running steps; then it answers at once. Without that hold, a loaded machine can run
every step before the next one starts, and the limit is never reached."""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path

import dagster as dg
import pytest

from bench.local_instances import SENSORS, local_instance
from gym_assets.defs.partitions import BENCHMARK, HARNESS, PARTITION_TAG
from gym_assets.defs.services import dagster_services, wait_for_runs
from gym_assets.local_services.roots import scratch_root
from gym_assets_tests.loopback_http import ChatOnly, serving
from gym_assets_tests.scale_out.local_servers import partition_tags, skip_unless_runs

BENCHMARKS = ["units", "arith"]
HARNESSES = ["simple_agent", "minimal_agent"]
POOL = "rollouts"
POOL_LIMIT = 2  # concurrency.pools.default_limit in dagster.postgres.yaml
RUN_TIMEOUT_S = 900.0
TAG = "gym_assets_tests/run_queue"
KEY_ENV = "GYM_ASSETS_TEST_KEY"
HOLD_S = 300.0

Interval = tuple[float, float]


def peak_overlap(intervals: list[Interval]) -> int:
    """The most intervals open at one instant (one that ends as another starts does not
    overlap it)."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    open_now = peak = 0
    for _, step in edges:
        open_now += step
        peak = max(peak, open_now)
    return peak


def step_interval(instance: dg.DagsterInstance, run_id: str, step_key: str) -> Interval:
    """When ``step_key`` of the run started and ended, from the run's event log."""
    kinds = {
        dg.DagsterEventType.STEP_START,
        dg.DagsterEventType.STEP_SUCCESS,
        dg.DagsterEventType.STEP_FAILURE,
    }
    times = {
        entry.dagster_event_type: entry.timestamp
        for entry in instance.all_logs(run_id, of_type=kinds)
        if entry.step_key == step_key
    }
    end = times.get(dg.DagsterEventType.STEP_SUCCESS, times.get(dg.DagsterEventType.STEP_FAILURE))
    assert end is not None, f"run {run_id} has no end of its {step_key} step"
    return times[dg.DagsterEventType.STEP_START], end


def held_chat(gate: threading.Event) -> type[ChatOnly]:
    """A Chat-only model server whose answers wait for ``gate``."""
    return type("HeldChat", (ChatOnly,), {"gate": gate})


def model_config(port: int) -> dict[str, object]:
    """Run config pointing the model gateway at the held Chat-only server on ``port``."""
    endpoint = {"upstream": "openai", "base_url": f"http://127.0.0.1:{port}/v1"}
    endpoint |= {"api_key_env": KEY_ENV, "api": "chat"}
    return {"resources": {"model_endpoint": {"config": endpoint}}}


def await_full_pool(instance: dg.DagsterInstance) -> None:
    """Return once every slot of the pool is claimed (by running steps, whose model calls are
    held); fail the test if that does not happen within ``HOLD_S``."""
    deadline = time.monotonic() + HOLD_S
    while len(instance.event_log_storage.get_concurrency_info(POOL).claimed_slots) < POOL_LIMIT:
        assert time.monotonic() < deadline, f"the {POOL} pool's slots were never all claimed"
        time.sleep(0.2)


def finished_runs(
    instance: dg.DagsterInstance, session: dict[str, str], count: int, job: str, logs: Path
) -> list[dg.DagsterRun]:
    """The session's ``count`` runs once all have ended, each a success (else the services'
    ``logs`` say why)."""
    runs = list(wait_for_runs(instance, session, count, RUN_TIMEOUT_S))
    failed = [
        f"{run.tags[PARTITION_TAG]}: {run.status.value}" for run in runs if not run.is_success
    ]
    assert not failed, f"{job} runs failed ({failed}); logs under {logs}"
    return runs


@pytest.mark.slow
def test_the_queue_bounds_rollouts_steps_and_never_overlaps_runs_of_a_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skip_unless_runs("postgres")
    monkeypatch.setenv(KEY_ENV, "sk-test")
    gate = threading.Event()
    with (
        scratch_root("gym-rq-") as scratch,
        local_instance(scratch, "postgres"),
        dg.DagsterInstance.get() as instance,
        dagster_services(("-m", "gym_assets.definitions"), logs=tmp_path / "logs") as services,
        serving(held_chat(gate)) as port,
    ):
        services.stop_sensors(SENSORS)
        instance.add_dynamic_partitions(BENCHMARK, BENCHMARKS)
        instance.add_dynamic_partitions(HARNESS, HARNESSES)
        services.start_daemon()
        session = {TAG: uuid.uuid4().hex}
        services.backfill("benchmark_job", BENCHMARKS, session)
        finished_runs(instance, session, len(BENCHMARKS), "benchmark_job", services.logs)

        keys = [{BENCHMARK: b, HARNESS: h} for b in BENCHMARKS for h in HARNESSES]
        again = keys[::3]  # units|simple_agent and arith|minimal_agent, queued a second time
        session = {TAG: uuid.uuid4().hex}
        try:
            for partition in keys + again:
                services.launch(
                    "rollouts_job", session | partition_tags(partition), model_config(port)
                )
            await_full_pool(instance)
        finally:
            gate.set()
        runs = finished_runs(instance, session, len(keys + again), "rollouts_job", services.logs)

        steps = [step_interval(instance, run.run_id, POOL) for run in runs]
        assert peak_overlap(steps) == POOL_LIMIT  # the limit was reached, never exceeded

        by_partition: dict[str, list[Interval]] = defaultdict(list)
        for run in runs:
            record = instance.get_run_record_by_id(run.run_id)
            assert record is not None and record.start_time and record.end_time
            by_partition[run.tags[PARTITION_TAG]].append((record.start_time, record.end_time))
        twice = sorted(str(dg.MultiPartitionKey(partition)) for partition in again)
        assert sorted(k for k, runs in by_partition.items() if len(runs) == 2) == twice
        for key, intervals in by_partition.items():
            assert peak_overlap(intervals) == 1, f"two runs of {key} overlapped: {intervals}"

        pool = instance.event_log_storage.get_concurrency_info(POOL)
        assert (pool.slot_count, pool.claimed_slots, pool.pending_steps) == (POOL_LIMIT, [], [])
