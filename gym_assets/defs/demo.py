"""``make demo``: materialize every bundled benchmark into the local Dagster instance.

Runs in-process against ``$DAGSTER_HOME`` (``.dagster_home/`` under ``make``) so the results
show up in ``make ui`` afterwards, then prints one line per benchmark and where outputs lie.
After the benchmarks it collects ``rollouts`` for HumanEval with the simple agent on the
offline reference upstream, so every task is verified by really running its unit tests.

The demo is handed the Definitions object (``python -m gym_assets.definitions`` runs it):
``defs/`` is what ``definitions.py`` is built from, so it never imports it back.
"""

from __future__ import annotations

import sys
import time

import dagster as dg

from gym_assets.defs.partitions import BENCHMARK, HARNESS
from gym_assets.defs.resources import GymWorkspace
from gym_assets.rollouts.harnesses import load_harnesses

DEMO_JOB = "benchmark_job"
ROLLOUTS_JOB = "rollouts_job"
DEMO_ROLLOUTS = {BENCHMARK: "humaneval", HARNESS: "simple_agent"}
ROLLOUT_HEADERS = ["rollouts", "run", "verified", "reward mean", "pass@1", "checks passed"]
ROLLOUT_HEADERS += ["failing checks", "time"]
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _planned_tasks(result: dg.ExecuteInProcessResult) -> str:
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        if materialization.asset_key == dg.AssetKey("eval_plan"):
            return str(materialization.metadata["tasks"].value)
    return "-"


def _check_summary(result: dg.ExecuteInProcessResult) -> tuple[int, int, list[str]]:
    evaluations = result.get_asset_check_evaluations()
    failed = [f"{e.check_name}({e.severity.value})" for e in evaluations if not e.passed]
    return len(evaluations) - len(failed), len(evaluations), failed


def _add_partitions(instance: dg.DagsterInstance, name: str, keys: list[str]) -> None:
    known = set(instance.get_dynamic_partitions(name))
    missing = [key for key in keys if key not in known]
    if missing:
        instance.add_dynamic_partitions(name, missing)


def _rollout_summary(defs: dg.Definitions, instance: dg.DagsterInstance) -> tuple[bool, list[str]]:
    """Materialize the demo rollouts partition with its checks; one summary row."""
    started = time.monotonic()
    label = " × ".join(DEMO_ROLLOUTS.values())
    print(f"collecting rollouts {label} ...", file=sys.stderr, flush=True)
    result = defs.resolve_job_def(ROLLOUTS_JOB).execute_in_process(
        run_config=QUIET,
        instance=instance,
        partition_key=dg.MultiPartitionKey(DEMO_ROLLOUTS),
        raise_on_error=False,
    )
    meta: dict = {}
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        if materialization.asset_key == dg.AssetKey("rollouts"):
            meta = {k: v.value for k, v in materialization.metadata.items()}
    passed, total, failed = _check_summary(result)

    def number(key: str) -> str:
        return f"{meta[key]:.3f}" if key in meta else "-"

    row = [
        label,
        "ok" if result.success else "FAILED",
        f"{meta.get('passed', '-')}/{meta.get('rollouts', '-')}",
        number("reward_mean"),
        number("pass@1"),
        f"{passed}/{total}",
        ", ".join(failed) or "-",
        f"{time.monotonic() - started:.1f}s",
    ]
    return result.success, row


def _print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print()
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def main(defs: dg.Definitions) -> int:
    instance = dg.DagsterInstance.get()
    workspace = GymWorkspace()
    catalog = workspace.catalog()
    names = catalog.names()
    _add_partitions(instance, BENCHMARK, names)
    _add_partitions(instance, HARNESS, list(load_harnesses(catalog.loaded)))
    job = defs.resolve_job_def(DEMO_JOB)
    rows: list[list[str]] = []
    ok = True
    for name in names:
        started = time.monotonic()
        print(f"materializing {name} ...", file=sys.stderr, flush=True)
        result = job.execute_in_process(
            run_config=QUIET, instance=instance, partition_key=name, raise_on_error=False
        )
        passed, total, failed = _check_summary(result)
        ok &= result.success
        status = "ok" if result.success else "FAILED"
        rows.append(
            [
                name,
                status,
                _planned_tasks(result),
                f"{passed}/{total}",
                ", ".join(failed) or "-",
                f"{time.monotonic() - started:.1f}s",
            ]
        )
    headers = ["benchmark", "run", "planned tasks", "checks passed", "failing checks", "time"]
    _print_table(headers, rows)
    rollouts_ok, rollout_row = _rollout_summary(defs, instance)
    ok &= rollouts_ok
    _print_table(ROLLOUT_HEADERS, [rollout_row])
    layout = workspace.layout
    print()
    print(f"prepared rows : {layout.root.resolve() / 'prepared'}  (bundled data stays in configs/)")
    print(f"tasksets      : {layout.root.resolve() / 'tasksets'}/<benchmark>/")
    print(f"plans         : {layout.root.resolve() / 'plans'}/<benchmark>/plan.json")
    print(f"rollouts      : {layout.root.resolve() / 'rollouts'}/<benchmark>/<harness>/")
    print(f"dagster home  : {instance.root_directory}  (see it with `make ui`)")
    return 0 if ok else 1
