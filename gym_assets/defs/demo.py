"""``make demo``: materialize every bundled benchmark into the local Dagster instance.

The runs are launched as the UI launches them (``gym_assets.defs.services``): queued on the
instance of ``$DAGSTER_HOME`` (``.dagster_home/`` under ``make``), started by the daemon, each
in a process of its own with the jobs' own executors. So they show in each job's run history in
``make ui``, and the demo costs what a run launched from the UI costs. First every benchmark
partition (prepare, collate, plan, with their checks), then ``rollouts`` for HumanEval with the
simple agent on the offline reference upstream, every task verified by running its unit tests.
One line per run as it ends, then a table and where outputs lie.

The demo is handed the Definitions object (``python -m gym_assets.definitions`` runs it):
``defs/`` is what ``definitions.py`` is built from, so it never imports it back.
"""

from __future__ import annotations

import sys
import uuid

import dagster as dg

from gym_assets.defs.partitions import BENCHMARK, HARNESS, PARTITION_TAG
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.services import dagster_services, wait_for_runs
from gym_assets.rollouts.harnesses.registry import load_harnesses

DEMO_JOB = "benchmark_job"
ROLLOUTS_JOB = "rollouts_job"
DEMO_ROLLOUTS = {BENCHMARK: "humaneval", HARNESS: "simple_agent"}
DEMO_TAG = "gym_assets/demo"
RUN_TIMEOUT_S = 900.0
BENCHMARK_HEADERS = ["benchmark", "run", "planned tasks", "checks passed", "failing checks"]
BENCHMARK_HEADERS += ["time"]
ROLLOUT_HEADERS = ["rollouts", "run", "verified", "reward mean", "pass@1", "checks passed"]
ROLLOUT_HEADERS += ["failing checks", "time"]


class RunOutcome:
    """What a finished run recorded: its materializations' metadata and its check verdicts."""

    def __init__(self, instance: dg.DagsterInstance, run: dg.DagsterRun):
        self.run = run
        self.metadata: dict[str, dict[str, object]] = {}
        self.checks: list[tuple[str, bool, str]] = []
        events = {
            dg.DagsterEventType.ASSET_MATERIALIZATION,
            dg.DagsterEventType.ASSET_CHECK_EVALUATION,
        }
        for entry in instance.all_logs(run.run_id, of_type=events):
            event = entry.get_dagster_event()
            if event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION:
                materialization = event.step_materialization_data.materialization
                key = materialization.asset_key.to_user_string()
                self.metadata[key] = {k: v.value for k, v in materialization.metadata.items()}
            else:
                check = event.asset_check_evaluation_data
                self.checks.append((check.check_name, check.passed, check.severity.value))
        record = instance.get_run_record_by_id(run.run_id)
        start, end = (record.start_time, record.end_time) if record else (None, None)
        self.seconds = (end - start) if start and end else None

    @property
    def ok(self) -> bool:
        return self.run.status == dg.DagsterRunStatus.SUCCESS

    def cells(self) -> list[str]:
        """run, checks passed, failing checks, time: the columns every table shares."""
        failed = [f"{name}({severity})" for name, passed, severity in self.checks if not passed]
        passed = len(self.checks) - len(failed)
        time = "-" if self.seconds is None else f"{self.seconds:.1f}s"
        status = "ok" if self.ok else self.run.status.value
        return [status, f"{passed}/{len(self.checks)}", ", ".join(failed) or "-", time]

    def value(self, asset: str, key: str) -> object:
        return self.metadata.get(asset, {}).get(key, "-")


def _add_partitions(instance: dg.DagsterInstance, name: str, keys: list[str]) -> None:
    known = set(instance.get_dynamic_partitions(name))
    missing = [key for key in keys if key not in known]
    if missing:
        instance.add_dynamic_partitions(name, missing)


def _outcomes(
    instance: dg.DagsterInstance, job: str, session: dict[str, str], count: int
) -> dict[str, RunOutcome]:
    """Each launched run's outcome, reported as it ends, by partition key."""
    outcomes: dict[str, RunOutcome] = {}
    for run in wait_for_runs(instance, session, count, RUN_TIMEOUT_S):
        outcome = RunOutcome(instance, run)
        key = run.tags[PARTITION_TAG]
        outcomes[key] = outcome
        print(f"  {job} {key}: {outcome.cells()[0]}", file=sys.stderr, flush=True)
    return dict(sorted(outcomes.items()))


def _print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print()
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _number(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def main(defs: dg.Definitions) -> int:
    instance = dg.DagsterInstance.get()
    workspace = GymWorkspace()
    catalog = workspace.catalog()
    names = catalog.names()
    _add_partitions(instance, BENCHMARK, names)
    _add_partitions(instance, HARNESS, list(load_harnesses(catalog.loaded)))
    for job in (DEMO_JOB, ROLLOUTS_JOB):
        defs.resolve_job_def(job)  # a job the definitions lack fails here, before any service
    print("starting a code server and the daemon ...", file=sys.stderr, flush=True)
    with dagster_services(("-m", "gym_assets.definitions")) as dagster:
        print(f"queueing {DEMO_JOB} for {len(names)} benchmarks ...", file=sys.stderr, flush=True)
        session = {DEMO_TAG: uuid.uuid4().hex[:12]}
        dagster.backfill(DEMO_JOB, names, session)
        dagster.start_daemon()
        benchmarks = _outcomes(instance, DEMO_JOB, session, len(names))
        key = str(dg.MultiPartitionKey(DEMO_ROLLOUTS))
        label = " × ".join(DEMO_ROLLOUTS.values())
        print(f"queueing {ROLLOUTS_JOB} for {label} ...", file=sys.stderr, flush=True)
        dagster.backfill(ROLLOUTS_JOB, [key], session)
        (rollouts,) = _outcomes(instance, ROLLOUTS_JOB, {**session, PARTITION_TAG: key}, 1).values()
    rows = []
    for name, outcome in benchmarks.items():
        run, *rest = outcome.cells()
        rows.append([name, run, str(outcome.value("eval_plan", "tasks")), *rest])
    _print_table(BENCHMARK_HEADERS, rows)
    run, *rest = rollouts.cells()
    passed, total = rollouts.value("rollouts", "passed"), rollouts.value("rollouts", "rollouts")
    reward = _number(rollouts.value("rollouts", "reward_mean"))
    pass_at_1 = _number(rollouts.value("rollouts", "pass@1"))
    _print_table(ROLLOUT_HEADERS, [[label, run, f"{passed}/{total}", reward, pass_at_1, *rest]])
    paths = workspace.paths
    print()
    print(f"prepared rows : {paths.data / 'prepared'}  (bundled data stays in configs/)")
    print(f"tasksets      : {paths.taskset_dir('<benchmark>')}/")
    print(f"plans         : {paths.plan_path('<benchmark>')}")
    print(f"rollouts      : {paths.rollouts_run_dir('<benchmark>', '<harness>')}/")
    print(f"dagster home  : {instance.root_directory}  (see it with `make ui`)")
    ok = rollouts.ok and all(outcome.ok for outcome in benchmarks.values())
    return 0 if ok else 1
