"""``eval_plan``: follows its taskset automatically, never past a failed blocking check."""

import dagster as dg

from gym_assets.defs.metadata import as_failure, labels, markdown_table
from gym_assets.defs.partitions import benchmark_partitions
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.tasksets.assets import collated_taskset
from gym_assets.errors import UserError
from gym_assets.plans.canonical import short_digest
from gym_assets.plans.model import SCHEMA_LABEL
from gym_assets.plans.pipeline import plan_benchmark
from gym_assets.plans.publish import publish_plan
from gym_assets.tasks.fingerprint import CODE_VERSIONS, InputsOf

PREVIEW_TASKS = 10


@dg.asset(
    partitions_def=benchmark_partitions,
    group_name="plans",
    **labels("evaluation"),
    deps=[collated_taskset],
    kinds={"python", "json"},
    code_version=CODE_VERSIONS["plan"],
    automation_condition=(
        dg.AutomationCondition.eager() & dg.AutomationCondition.all_deps_blocking_checks_passed()
    ),
    description=f"The benchmark's `{SCHEMA_LABEL}` file, "
    "`<data_root>/plans/<benchmark>/plan.json`: every task once, sorted by id, with the "
    "SHA-256 of its canonical task input.",
)
def eval_plan(context: dg.AssetExecutionContext, workspace: GymWorkspace) -> dg.MaterializeResult:
    name = context.partition_key
    try:
        catalog = workspace.catalog()
        benchmark = catalog.get(name)
        inputs = InputsOf(catalog, benchmark).product("plan")
        plan = plan_benchmark(benchmark, warn=context.log.warning)
        published = publish_plan(plan, benchmark, inputs)
    except UserError as exc:
        raise as_failure(exc) from None
    preview = markdown_table(
        ["task_id", "taskset", "digest"],
        [[t.task_id, t.taskset, short_digest(t.digest)] for t in plan.tasks[:PREVIEW_TASKS]],
    )
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(published.path)),
            "tasks": dg.MetadataValue.int(len(plan.tasks)),
            "sha256": dg.MetadataValue.text(published.sha256),
            "schema": dg.MetadataValue.text(SCHEMA_LABEL),
            "gym_commit": dg.MetadataValue.text(plan.gym.commit or "unknown"),
            "first_tasks": dg.MetadataValue.md(preview),
        },
        data_version=dg.DataVersion(published.sha256),
    )
