"""One benchmark partition materialized the way `benchmark_job` does, on a test instance."""

import dagster as dg

from gym_assets.defs.partitions import benchmark_partitions
from gym_assets.defs.plans import assets as plan_assets
from gym_assets.defs.plans import checks as plan_checks
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.tasksets import assets as taskset_assets
from gym_assets.defs.tasksets import checks as taskset_checks

BENCHMARK_DEFS = [
    taskset_assets.prepared_benchmark,
    taskset_assets.collated_taskset,
    plan_assets.eval_plan,
    *dg.load_asset_checks_from_modules([taskset_checks, plan_checks]),
]


def materialize_benchmark(
    workspace: GymWorkspace, instance: dg.DagsterInstance, name: str
) -> dg.ExecuteInProcessResult:
    """Prepare, collate and plan ``name`` with every check (its partition is added first)."""
    instance.add_dynamic_partitions(benchmark_partitions.name, [name])
    return dg.materialize(
        BENCHMARK_DEFS, resources={"workspace": workspace}, instance=instance, partition_key=name
    )
