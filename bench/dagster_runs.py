"""Benchmark: Dagster's share of a run launched the way the daemon launches it.

    .venv/bin/python bench/dagster_runs.py [--rounds 3] [--benchmark humaneval] [--storage sqlite]

Sets up a temporary ``DAGSTER_HOME`` holding the repo's ``deploy/instance/dagster.yaml``
(``--storage postgres``: ``dagster.postgres.yaml`` beside it, on the project's own Postgres
cluster, started and stopped here; ``bench/local_instances.py``), a copy of ``configs/`` and
fresh data roots; starts a code server (``dagster api grpc``) for the code location of
``bench/dagster_runs_location.py`` (the project's definitions plus an empty job) and the daemon
(``dagster-daemon run``; the project's sensors are stopped first so that they launch nothing of
their own). Each round then submits, with ``dagster job launch``, one run of

- ``empty_job``: one op that does nothing, i.e. the fixed cost of any run (a process started by
  the code server, the code location loaded, run setup and teardown);
- ``benchmark_job`` on one benchmark partition: prepare, collate, plan and their 8 checks;
- ``rollouts_job`` on ``<benchmark>|<harness>``: the rollouts and their 5 checks, offline
  (reference upstream, every HumanEval solution verified in the sandbox);
- ``conformance_job`` on ``<harness>``: the seven-scenario conformance suite and its P0 gate;

through the instance's run coordinator (the queue), from which the daemon hands it to the
default run launcher, which has the code server start it in its own process (the code server
and daemon are ``gym_assets.defs.services``, as ``make demo`` starts them); the bench polls
the instance until the run ends and checks that every asset and check was recorded.

A run's **wall** time is from its launch (``RUN_STARTING``) to its end: its **startup** (the
process started and the code location loaded, up to ``RUN_START``) and the run itself; the
queue wait before the launch is printed beside it. The **library** time is the same work done
by calling the library directly (catalog, prepare, collate, plan + publish, the checks;
``run_rollouts`` + its checks; the suite + the gate) in a fresh interpreter per round, imports
excluded (a run imports them while loading the code, which the fixed cost holds). **events**
counts what the run wrote to the event log. Medians over the rounds.

Last, the cost of one committed write to the instance's storage is printed (sqlite: on its
disk; Postgres: a connection to the cluster, an insert, a commit): it is what each event costs
at the least, whatever Dagster does around it.

A job's Dagster overhead **beyond the fixed cost** is its run after ``RUN_START``, minus the
empty job's in the same round, minus the library time (start-up is the same work for every
job of the code location, so it is compared where it is not drowned in a shared machine's
noise). Bars (exit 1 when one is missed): every job's wall <= 1.5 x library + fixed (the empty
job's wall), i.e. beyond fixed <= 0.5 x library; and the benchmark partition's beyond fixed
under 0.3 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from local_instances import SENSORS, STORAGES, local_instance

from gym_assets.local_services.postgres import URL_VARIABLE
from gym_assets.local_services.roots import scratch_root
from gym_assets.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RATIO_BAR = 1.5
OVERHEAD_BAR_S = 0.3
RUN_TIMEOUT_S = 900.0


# --- the library's own time (run in a child interpreter) -------------------------------------


def library_benchmark(configs: Path, data: Path, name: str) -> float:
    """What ``benchmark_job`` does for partition ``name``, as plain library calls."""
    from gym_assets.plans import checks as plan_checks
    from gym_assets.plans.model import load_plan
    from gym_assets.plans.pipeline import plan_benchmark
    from gym_assets.plans.publish import load_previous, publish_plan
    from gym_assets.tasks import checks as taskset_checks
    from gym_assets.tasks.catalog import load_catalog
    from gym_assets.tasks.pipeline import REPORT_NAME, collate_benchmark, collated_path
    from gym_assets.tasks.prepare import prepare_benchmark

    started = time.perf_counter()
    catalog = load_catalog(Workspace(configs, data))
    benchmark, workspace = catalog.get(name), catalog.workspace
    prepare_benchmark(benchmark)
    taskset_dir = workspace.taskset_dir(name)
    collate_benchmark(catalog, name, taskset_dir)
    report = json.loads((taskset_dir / REPORT_NAME).read_text("utf-8"))
    collated = collated_path(taskset_dir, benchmark)
    outcomes = [
        taskset_checks.task_data_valid(report),
        taskset_checks.task_ids_unique(collated, report),
        taskset_checks.route_resolves(catalog, benchmark),
        taskset_checks.stable_task_ids(collated),
    ]
    publish_plan(plan_benchmark(benchmark), benchmark)
    plan_path = workspace.plan_path(name)
    outcomes += [
        plan_checks.plan_schema_valid(plan_path),
        plan_checks.plan_deterministic(plan_path, benchmark),
        plan_checks.plan_covers_taskset(load_plan(plan_path), collated),
        plan_checks.plan_drift(
            load_previous(workspace.previous_plan_path(name)), load_plan(plan_path)
        ),
    ]
    seconds = time.perf_counter() - started
    assert all(o.passed for o in outcomes), [o.description for o in outcomes if not o.passed]
    return seconds


def library_rollouts(configs: Path, data: Path, benchmark: str, harness_name: str) -> float:
    """What ``rollouts_job`` does for ``benchmark|harness`` with the resources' defaults."""
    from gym_assets.plans.model import load_plan
    from gym_assets.rollouts.collection import checks
    from gym_assets.rollouts.collection.files import RunFiles
    from gym_assets.rollouts.gateway.upstream_config import upstream_config
    from gym_assets.rollouts.harnesses.registry import get_harness, load_harnesses
    from gym_assets.rollouts.options import RunOptions
    from gym_assets.rollouts.run import run_rollouts
    from gym_assets.tasks.catalog import load_catalog

    started = time.perf_counter()
    catalog = load_catalog(Workspace(configs, data))
    harness = get_harness(load_harnesses(catalog.loaded.data), harness_name)
    out_dir = catalog.workspace.rollouts_run_dir(benchmark, harness_name)
    run_rollouts(
        catalog, benchmark, harness, out_dir, upstream_config(mode="reference"), RunOptions()
    )
    files, taskset = RunFiles(out_dir), catalog.get(benchmark).taskset
    plan = load_plan(catalog.workspace.plan_path(benchmark))
    outcomes = [
        checks.rollouts_cover_plan(plan, files, taskset),
        checks.inputs_match_plan(plan, files, taskset),
        checks.unmeasured_share(files, taskset, checks.DEFAULT_MAX_UNMEASURED_SHARE),
        checks.evidence_present(files),
    ]
    seconds = time.perf_counter() - started
    assert all(o.passed for o in outcomes), [o.description for o in outcomes if not o.passed]
    return seconds


def library_conformance(configs: Path, data: Path, harness: str) -> float:
    """What ``conformance_job`` does for ``harness``: the whole suite, then its P0 gate."""
    from gym_assets.suite import harness_runs
    from gym_assets.suite.run import run_suite
    from gym_assets.tasks.catalog import load_catalog

    started = time.perf_counter()
    catalog = load_catalog(Workspace(configs, data))
    runs = catalog.workspace.conformance_runs_dir(harness)
    harness_runs.run_in_new_dir(
        runs,
        catalog.workspace,
        uuid.uuid4().hex,
        lambda output: run_suite(
            catalog.loaded, harnesses=[harness], scenarios=None, output=output,
            configs=str(configs),
        ),
    )  # fmt: skip
    outcome = harness_runs.p0_gate(harness_runs.latest_run(runs), harness)
    seconds = time.perf_counter() - started
    assert outcome.passed, outcome.description
    return seconds


LIBRARY = {
    "benchmark": library_benchmark,
    "rollouts": library_rollouts,
    "conformance": library_conformance,
}


def library_time(*args: str) -> float:
    """Seconds of one library run in a fresh interpreter (imports not counted)."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return float(out.stdout.strip().splitlines()[-1])


# --- the Dagster side ------------------------------------------------------------------------


@dataclass
class Job:
    label: str
    name: str
    tags: dict[str, str]
    checks: int  # check evaluations the run must record
    library: tuple[str, ...] | None  # the child's arguments, None for the empty job


@dataclass
class Timing:
    queue_s: float  # queued -> launched by the daemon
    startup_s: float  # launched -> RUN_START: the run's process started and loaded the code
    run_s: float  # RUN_START -> RUN_SUCCESS
    events: int  # what the run wrote to the event log

    @property
    def wall_s(self) -> float:  # launched -> end
        return self.startup_s + self.run_s


Results = dict[str, list[tuple[Timing, float | None]]]  # per job: (timing, library s) a round


def dagster(*args: str, workspace: Path) -> None:
    subprocess.run(
        [str(BIN / "dagster"), *args, "-w", str(workspace)],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )


def run_once(instance, job: Job, workspace: Path) -> Timing:
    """Submit ``job`` as the UI would, wait for it, return its timing."""
    import dagster as dg

    run_id = str(uuid.uuid4())
    dagster(
        "job", "launch", "-j", job.name, "--run-id", run_id, "--tags", json.dumps(job.tags),
        workspace=workspace,
    )  # fmt: skip
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        record = instance.get_run_record_by_id(run_id)
        if record is not None and record.dagster_run.is_finished:
            break
        if time.monotonic() > deadline:
            sys.exit(f"{job.label}: run {run_id} did not finish in {RUN_TIMEOUT_S:.0f}s")
        time.sleep(0.05)
    if record.dagster_run.status != dg.DagsterRunStatus.SUCCESS:
        sys.exit(f"{job.label}: run {run_id} ended {record.dagster_run.status.value}")
    logs = instance.all_logs(run_id)

    def at(kind: dg.DagsterEventType) -> float:
        return next(e.timestamp for e in logs if e.dagster_event_type == kind)

    evaluations = [
        e.get_dagster_event().event_specific_data
        for e in logs
        if e.dagster_event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
    ]
    passed = sum(evaluation.passed for evaluation in evaluations)
    if passed != job.checks:
        sys.exit(f"{job.label}: {passed} of {len(evaluations)} checks passed, not {job.checks}")
    launched, started = at(dg.DagsterEventType.RUN_STARTING), at(dg.DagsterEventType.RUN_START)
    return Timing(
        queue_s=launched - at(dg.DagsterEventType.RUN_ENQUEUED),
        startup_s=started - launched,
        run_s=at(dg.DagsterEventType.RUN_SUCCESS) - started,
        events=len(logs),
    )


def sqlite_write_ms(directory: Path, writes: int = 50) -> float:
    """One committed write on the instance's disk, the way Dagster's sqlite event log writes
    an event: a new connection to a WAL database, an insert, a commit, a close."""
    path = directory / "write_probe.db"
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("CREATE TABLE events (n INTEGER)")
    started = time.perf_counter()
    for n in range(writes):
        with contextlib.closing(sqlite3.connect(path)) as connection, connection:
            connection.execute("INSERT INTO events VALUES (?)", (n,))
    seconds = time.perf_counter() - started
    path.unlink()
    return seconds / writes * 1000


def postgres_write_ms(url: str, writes: int = 50) -> float:
    """One committed write to the instance's Postgres: a new connection, an insert, a commit."""
    import sqlalchemy as sa
    from sqlalchemy.pool import NullPool

    engine = sa.create_engine(url, poolclass=NullPool)
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE write_probe (n INTEGER)"))
    started = time.perf_counter()
    for n in range(writes):
        with engine.begin() as connection:
            connection.execute(sa.text("INSERT INTO write_probe VALUES (:n)"), {"n": n})
    seconds = time.perf_counter() - started
    with engine.begin() as connection:
        connection.execute(sa.text("DROP TABLE write_probe"))
    engine.dispose()
    return seconds / writes * 1000


def write_cost(storage: str, directory: Path) -> str:
    """What one committed write to the instance's storage costs, as a line of the report."""
    if storage == "postgres":
        ms = postgres_write_ms(os.environ[URL_VARIABLE])
        return f"one committed write to the instance's Postgres: {ms:.1f} ms"
    ms = sqlite_write_ms(directory)
    return f"one committed sqlite write on this disk: {ms:.1f} ms"


def measure(args: argparse.Namespace, tmp: Path) -> tuple[Results, str]:
    """Every round's timings, and the cost of one committed write to the instance's storage."""
    import dagster as dg

    with local_instance(tmp, args.storage) as local, dg.DagsterInstance.get() as instance:
        return measure_on(args, tmp, local.workspace.configs, instance), write_cost(
            args.storage, tmp
        )


def measure_on(args: argparse.Namespace, tmp: Path, configs: Path, instance) -> Results:
    from gym_assets.defs.partitions import benchmark_partitions, harness_partitions
    from gym_assets.defs.services import dagster_services

    instance.add_dynamic_partitions(benchmark_partitions.name, [args.benchmark])
    instance.add_dynamic_partitions(harness_partitions.name, [args.harness])
    rollouts_key = f"{args.benchmark}|{args.harness}"
    roots = (str(configs), str(tmp / "library_data"))
    jobs = [
        Job("empty_job (fixed cost)", "empty_job", {}, 0, None),
        Job(
            f"benchmark_job[{args.benchmark}]",
            "benchmark_job",
            {"dagster/partition": args.benchmark},
            8,
            ("benchmark", *roots, args.benchmark),
        ),
        Job(
            f"rollouts_job[{rollouts_key}]",
            "rollouts_job",
            {
                "dagster/partition": rollouts_key,
                "dagster/partition/benchmark": args.benchmark,
                "dagster/partition/harness": args.harness,
            },
            5,
            ("rollouts", *roots, args.benchmark, args.harness),
        ),
        Job(
            f"conformance_job[{args.harness}]",
            "conformance_job",
            {"dagster/partition": args.harness},
            1,
            ("conformance", *roots, args.harness),
        ),
    ]
    location = ("-f", str(ROOT / "bench" / "dagster_runs_location.py"), "-d", str(ROOT))
    with dagster_services((*location, "-a", "defs"), logs=tmp) as services:
        services.stop_sensors(SENSORS)
        services.start_daemon()
        results: Results = {job.label: [] for job in jobs}
        for round_ in range(1, args.rounds + 1):
            for job in jobs:
                timing = run_once(instance, job, services.workspace)
                library = library_time(*job.library) if job.library else None
                results[job.label].append((timing, library))
                lib = f", library {library:.2f}s" if library is not None else ""
                print(
                    f"round {round_}: {job.label}: wall {timing.wall_s:.2f}s{lib}",
                    file=sys.stderr,
                    flush=True,
                )
        return results


def report(results: Results) -> bool:
    """One line per job (medians over the rounds); True when every bar holds.

    A job's cost beyond the fixed cost compares its run with the empty job's run of the same
    round after RUN_START: the start-up before it is the same work for every job of the code
    location (a process, the code location's imports), and on a shared machine its noise would
    drown a difference of a tenth of a second. Both bars are read from it:
    wall <= 1.5 x library + fixed  <=>  beyond fixed <= 0.5 x library.
    """
    labels = list(results)
    empty = [timing for timing, _ in results[labels[0]]]
    print(
        f"{'job':<38} {'events':>6} {'queue':>6} {'startup':>7} {'wall':>6} {'library':>7} "
        f"{'ratio':>6} {'beyond fixed':>12}  bars (seconds)"
    )
    ok = True
    for index, label in enumerate(labels):
        runs = results[label]
        wall = statistics.median(t.wall_s for t, _ in runs)
        line = (
            f"{label:<38} {statistics.median(t.events for t, _ in runs):>6.0f} "
            f"{statistics.median(t.queue_s for t, _ in runs):>6.2f} "
            f"{statistics.median(t.startup_s for t, _ in runs):>7.2f} {wall:>6.2f}"
        )
        if index == 0:
            print(f"{line}  = fixed, the cost of any run")
            continue
        library = statistics.median(lib for _, lib in runs if lib is not None)
        beyond = statistics.median(
            t.run_s - e.run_s - (lib or 0.0) for (t, lib), e in zip(runs, empty, strict=True)
        )
        allowed = (RATIO_BAR - 1) * library
        verdicts = [f"<= {RATIO_BAR} x library + fixed: beyond <= {allowed:.2f}"]
        passed = beyond <= allowed
        if index == 1:  # the benchmark partition
            verdicts.append(f"beyond < {OVERHEAD_BAR_S}")
            passed &= beyond < OVERHEAD_BAR_S
        ok &= passed
        print(
            f"{line} {library:>7.2f} {wall / library:>5.1f}x {beyond:>12.2f}  "
            f"{'; '.join(verdicts)}: {'ok' if passed else 'MISSED'}"
        )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--benchmark", default="humaneval")
    parser.add_argument("--harness", default="simple_agent")
    parser.add_argument("--storage", choices=STORAGES, default="sqlite")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, configs, data, *names = args.child
        print(LIBRARY[kind](Path(configs), Path(data), *names))
        return 0
    with scratch_root("dagster-runs-") as tmp:
        results, write = measure(args, tmp)
    ok = report(results)
    print(f"instance storage: {args.storage}; {write} (the event log makes one per event, two or "
          "three for an asset or check event)")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
