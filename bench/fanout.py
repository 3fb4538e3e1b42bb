"""Benchmark: a fan-out of benchmark × harness partitions through the run queue.

    .venv/bin/python bench/fanout.py [--benchmarks 100] [--modes sqlite,postgres,celery-1,celery-2]

Each mode makes a fresh instance (``bench/local_instances.py``) whose configs hold ``N`` copies
of the bundled ``units`` benchmark under new names (30 one-call tasks each, an exact match),
starts a code server for the project's definitions and the daemon (``gym_assets.defs.services``,
as ``make demo`` does; the sensors that launch runs of their own stopped), and queues, as the UI
does, one backfill of ``benchmark_job`` over the N benchmarks and, once those have ended, one
backfill of ``rollouts_job`` over the N × 2 partitions ``<benchmark>|simple_agent`` and
``<benchmark>|minimal_agent`` (both offline: the reference upstream answers). The instance's
limits are the repo's (``concurrency`` in the yaml files: two runs at once, one per partition,
two rollouts steps at once in the pool ``rollouts``).

Modes: ``sqlite`` (``dagster.yaml``), ``postgres`` (``dagster.postgres.yaml`` on the project's
own cluster), and ``celery-1`` / ``celery-2``: the Postgres instance with
``GYM_ASSETS_EXECUTOR=celery``, so each rollouts run hands its steps to ``dagster-celery``
workers (one execution slot each) through the project's own Redis.

Per mode: the wall time (first backfill to the last run's end) and that of the rollouts phase,
runs per minute, the queue latency (a run record's creation to its start; median and p95, the
wait for a slot included: with two runs at once, most of a large backfill waits), the daemon's
peak memory (RSS of its process tree, sampled every half second) and, for Celery, how many
steps each worker ran (its log). Last, the speed-up of two workers over one on the rollouts
phase. No bar: the numbers are printed; exit 1 when a run did not succeed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil
from local_instances import ROOT, SENSORS, copy_benchmark, local_instance

from gym_assets.defs.executors import CELERY_CONFIG
from gym_assets.local_services.celery_workers import celery_workers
from gym_assets.local_services.redis import LocalRedis
from gym_assets.local_services.roots import scratch_root

HARNESSES = ("simple_agent", "minimal_agent")
MODES = {"sqlite": 0, "postgres": 0, "celery-1": 1, "celery-2": 2}
"""Each mode and its Celery workers (0: the rollouts job's default in-process executor)."""
RUN_TIMEOUT_S = 7200.0
SAMPLE_S = 0.5
TASK_DONE = re.compile(r"Task execute_plan\[[^\]]+\] succeeded")
"""The line a Celery worker logs for each step it ran."""
TAG = "gym_assets/bench"


@dataclass
class Outcome:
    mode: str
    runs: int
    failed: list[str]
    wall_s: float
    rollouts_wall_s: float
    latencies_s: list[float]
    daemon_peak_mb: float
    steps_per_worker: dict[str, int]


class PeakRss:
    """The peak resident memory of a process and its descendants, sampled in a thread."""

    def __init__(self, pid: int):
        self.process = psutil.Process(pid)
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            total = 0
            with contextlib.suppress(psutil.Error):
                for proc in [self.process, *self.process.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        total += proc.memory_info().rss
            self.peak_mb = max(self.peak_mb, total / 2**20)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak_mb


@contextmanager
def broker(root: Path, workers: int) -> Iterator[dict[str, str]]:
    """The variables that send rollouts steps to Celery through the project's Redis (started
    here and stopped on the way out); none when the mode has no workers."""
    if not workers:
        yield {}
        return
    from gym_assets.local_services.redis import URL_VARIABLE

    redis = LocalRedis(root / "redis")
    try:
        yield {"GYM_ASSETS_EXECUTOR": "celery", URL_VARIABLE: redis.start()}
    finally:
        redis.stop()


def run_mode(mode: str, benchmarks: int, scratch: Path, logs: Path) -> Outcome:
    import dagster as dg

    from gym_assets.defs.partitions import BENCHMARK, HARNESS
    from gym_assets.defs.services import dagster_services, wait_for_runs

    workers = MODES[mode]
    root = scratch / mode
    names = [f"fan{index:03d}" for index in range(benchmarks)]
    keys = [str(dg.MultiPartitionKey({BENCHMARK: n, HARNESS: h})) for n in names for h in HARNESSES]
    logs = logs / mode
    with ExitStack() as stack:
        environ = stack.enter_context(broker(root, workers))
        storage = "sqlite" if mode == "sqlite" else "postgres"
        local = stack.enter_context(local_instance(root, storage, **environ))
        for name in names:
            copy_benchmark(local.workspace.configs, name)
        instance = stack.enter_context(dg.DagsterInstance.get())
        services = stack.enter_context(dagster_services(("-m", "gym_assets.definitions"), logs))
        services.stop_sensors(SENSORS)
        if workers:
            names_ = [f"worker{index}" for index in range(1, workers + 1)]
            stack.enter_context(
                celery_workers(names_, CELERY_CONFIG, env=dict(os.environ), logs=logs, cwd=ROOT)
            )
        instance.add_dynamic_partitions(BENCHMARK, names)
        instance.add_dynamic_partitions(HARNESS, list(HARNESSES))
        session = uuid.uuid4().hex
        started = time.monotonic()
        services.backfill("benchmark_job", names, {TAG: f"{session}-benchmarks"})
        memory = PeakRss(services.start_daemon().pid)
        try:
            runs = list(
                wait_for_runs(instance, {TAG: f"{session}-benchmarks"}, len(names), RUN_TIMEOUT_S)
            )
            phase = time.monotonic()
            services.backfill("rollouts_job", keys, {TAG: f"{session}-rollouts"})
            runs += wait_for_runs(instance, {TAG: f"{session}-rollouts"}, len(keys), RUN_TIMEOUT_S)
            ended = time.monotonic()
        finally:
            peak = memory.stop()
        latencies = []
        for run in runs:
            record = instance.get_run_record_by_id(run.run_id)
            if record is not None and record.start_time is not None:
                latencies.append(record.start_time - record.create_timestamp.timestamp())
        failed = [
            f"{run.job_name} {run.tags.get('dagster/partition')}"
            for run in runs
            if not run.is_success
        ]
    steps = {
        log.stem: len(TASK_DONE.findall(log.read_text(errors="replace")))
        for log in sorted(logs.glob("worker*.log"))
    }
    return Outcome(mode, len(runs), failed, ended - started, ended - phase, latencies, peak, steps)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def report(outcomes: list[Outcome]) -> None:
    print(
        f"{'mode':<9} {'runs':>5} {'failed':>6} {'wall':>8} {'rollouts':>8} {'runs/min':>8} "
        f"{'queue p50':>9} {'queue p95':>9} {'daemon MB':>9}  steps per worker"
    )
    for o in outcomes:
        workers = ", ".join(f"{name}: {count}" for name, count in o.steps_per_worker.items())
        print(
            f"{o.mode:<9} {o.runs:>5} {len(o.failed):>6} {o.wall_s:>7.1f}s "
            f"{o.rollouts_wall_s:>7.1f}s {o.runs / o.wall_s * 60:>8.1f} "
            f"{statistics.median(o.latencies_s):>8.1f}s {p95(o.latencies_s):>8.1f}s "
            f"{o.daemon_peak_mb:>9.0f}  {workers or '-'}"
        )
        for failure in o.failed:
            print(f"  did not succeed: {failure}")
    by_mode = {o.mode: o for o in outcomes}
    if "celery-1" in by_mode and "celery-2" in by_mode:
        one, two = by_mode["celery-1"].rollouts_wall_s, by_mode["celery-2"].rollouts_wall_s
        print(
            f"speed-up of 2 Celery workers over 1 on the rollouts phase: {one / two:.2f}x "
            f"({one:.1f}s -> {two:.1f}s; {os.cpu_count()} cores)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=100)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument(
        "--logs", type=Path, help="keep the services' and workers' logs here (default: dropped)"
    )
    args = parser.parse_args()
    modes = args.modes.split(",")
    unknown = sorted(set(modes) - set(MODES))
    if unknown or args.benchmarks < 1:
        parser.error(f"--modes takes {', '.join(MODES)}; --benchmarks at least 1")
    # a bench stopped with SIGTERM still stops what it started (the blocks' exits run)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    outcomes = []
    with scratch_root("gym-fanout-") as scratch:
        for mode in modes:
            print(f"{mode}: {args.benchmarks} benchmarks x {len(HARNESSES)} harnesses ...",
                  file=sys.stderr, flush=True)  # fmt: skip
            outcome = run_mode(mode, args.benchmarks, scratch, args.logs or scratch / "logs")
            print(f"{mode}: {outcome.runs} runs in {outcome.wall_s:.1f}s", file=sys.stderr)
            outcomes.append(outcome)
    report(outcomes)
    return 1 if any(o.failed for o in outcomes) else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
