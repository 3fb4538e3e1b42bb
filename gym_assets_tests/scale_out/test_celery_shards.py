"""One partition collected as two shards on two real Celery workers, merged into one run.

The same servers as ``test_celery_fanout.py`` (the project's own Postgres and Redis, a code
server, the daemon, two one-slot ``dagster-celery`` workers), with the code location loaded as
a deployment that shards (``GYM_ASSETS_ROLLOUT_SHARDS=2``). ``rollouts_job`` runs for
``units × simple_agent`` with each task four times (120 rollouts): each worker takes one shard,
the merge makes the run's products, and they are the products a run in one process makes of the
same partition. 2.5 to 5.5 minutes on a 2-core machine, depending on what else it runs.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import dagster as dg
import pytest

from gym_assets.defs.demo import RunOutcome
from gym_assets.defs.executors import CELERY_CONFIG, SHARDS_VARIABLE
from gym_assets.defs.partitions import BENCHMARK, HARNESS
from gym_assets.defs.services import dagster_services, wait_for_runs
from gym_assets.local_dagster import LocalHome
from gym_assets.local_services.celery_workers import celery_workers
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import run_rollouts
from gym_assets.tasks.catalog import load_catalog
from gym_assets_tests.rollouts.same_run import assert_same_run
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

PARTITION = {BENCHMARK: "units", HARNESS: "simple_agent"}
REPEATS = 4
CONFIG = {"resources": {"harness_runner": {"config": {"repeats": REPEATS}}}}
SHARD_STEPS = ["rollouts.shard_1_of_2", "rollouts.shard_2_of_2"]
RUN_TIMEOUT_S = 600.0


def test_one_partition_runs_as_shards_on_two_workers(
    scratch: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    local = home(scratch)
    with servers(scratch / "services") as (database, broker, redis):
        env = local.environ() | {
            "DAGSTER_PG_URL": database,
            "GYM_ASSETS_CELERY_BROKER": broker,
            "GYM_ASSETS_EXECUTOR": "celery",
            SHARDS_VARIABLE: "2",
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        with dg.DagsterInstance.get() as instance:
            _shard_and_compare(instance, local, scratch)
    outlived = leftovers(scratch, redis)
    assert not outlived, f"processes of the test outlived it: {outlived}"


def _shard_and_compare(instance: dg.DagsterInstance, local: LocalHome, root: Path) -> None:
    session = {SESSION_TAG: uuid.uuid4().hex[:12]}
    logs = root / "logs"
    with (
        dagster_services(("-m", "gym_assets.definitions"), logs) as dagster,
        celery_workers(WORKERS, CELERY_CONFIG, env=os.environ, logs=logs, cwd=REPO),
    ):
        instance.add_dynamic_partitions(BENCHMARK, [PARTITION[BENCHMARK]])
        instance.add_dynamic_partitions(HARNESS, [PARTITION[HARNESS]])
        dagster.backfill("benchmark_job", [PARTITION[BENCHMARK]], session)
        dagster.start_daemon()
        (prepared,) = wait_for_runs(instance, session, 1, RUN_TIMEOUT_S)
        assert prepared.status == dg.DagsterRunStatus.SUCCESS
        dagster.launch("rollouts_job", session | partition_tags(PARTITION), CONFIG)
        (run,) = (r for r in wait_for_runs(instance, session, 2, RUN_TIMEOUT_S) if r != prepared)

    outcome = RunOutcome(instance, run)
    assert outcome.ok, f"the sharded run ended {run.status}"
    assert outcome.checks and all(passed for _, passed, _ in outcome.checks), outcome.checks
    steps = dict(
        (step, host.partition("@")[0]) for host, step in celery_steps(instance, run.run_id)
    )
    assert sorted(steps) == sorted(
        [*SHARD_STEPS, "rollouts.merge_rollout_shards", "rollouts_checks"]
    )
    assert {steps[step] for step in SHARD_STEPS} == set(WORKERS)  # one shard on each worker
    metadata = outcome.metadata["rollouts"]
    assert metadata["rollouts"] == metadata["dispatched"] == 30 * REPEATS
    assert metadata["shards"] == 2

    # The same partition in one process: the same products.
    catalog = load_catalog(local.workspace)
    harness = load_harnesses(catalog.loaded.data)[PARTITION[HARNESS]]
    started = time.monotonic()
    one = run_rollouts(
        catalog,
        PARTITION[BENCHMARK],
        harness,
        root / "one-process",
        upstream_config(mode="reference"),
        RunOptions(repeats=REPEATS),
    )
    one_seconds = time.monotonic() - started
    merged = local.workspace.rollouts_run_dir(PARTITION[BENCHMARK], PARTITION[HARNESS])
    assert_same_run(one.files.out_dir, merged)
    print(
        f"\n{30 * REPEATS} rollouts: sharded run {outcome.seconds:.1f} s (shards collected "
        f"{metadata['rollouts_per_second']}/s, longest shard), one process "
        f"{one_seconds:.1f} s ({one.rollouts_per_second:.1f}/s); steps: {steps}"
    )
