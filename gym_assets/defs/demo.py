"""``make demo``: materialize every bundled benchmark into the local Dagster instance.

Runs in-process against ``$DAGSTER_HOME`` (``.dagster_home/`` under ``make``) so the results
show up in ``make ui`` afterwards, then prints one line per benchmark and where outputs lie.
"""

from __future__ import annotations

import sys
import time

import dagster as dg

from gym_assets.definitions import defs
from gym_assets.defs.partitions import benchmark_partitions
from gym_assets.defs.resources import GymWorkspace

DEMO_JOB = "benchmark_job"
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


def main() -> int:
    instance = dg.DagsterInstance.get()
    workspace = GymWorkspace()
    catalog = workspace.catalog()
    names = catalog.names()
    known = set(instance.get_dynamic_partitions(benchmark_partitions.name))
    missing = [name for name in names if name not in known]
    if missing:
        instance.add_dynamic_partitions(benchmark_partitions.name, missing)
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
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print()
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    layout = workspace.layout
    print()
    print(f"prepared rows : {layout.root.resolve() / 'prepared'}  (bundled data stays in configs/)")
    print(f"tasksets      : {layout.root.resolve() / 'tasksets'}/<benchmark>/")
    print(f"plans         : {layout.root.resolve() / 'plans'}/<benchmark>/plan.json")
    print(f"dagster home  : {instance.root_directory}  (see it with `make ui`)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
