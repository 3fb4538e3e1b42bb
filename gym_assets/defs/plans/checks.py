"""Asset checks on ``eval_plan``: schema and coverage block; drift is an advisory."""

import dagster as dg

from gym_assets.defs.metadata import check_result, partition_of
from gym_assets.defs.plans.assets import eval_plan
from gym_assets.defs.resources import GymWorkspace
from gym_assets.plans import checks
from gym_assets.plans.model import load_plan
from gym_assets.plans.publish import load_previous
from gym_assets.tasks.pipeline import collated_path


@dg.asset_check(asset=eval_plan, blocking=True, description=checks.plan_schema_valid.__doc__)
def plan_schema_valid(
    context: dg.AssetCheckExecutionContext, workspace: GymWorkspace
) -> dg.AssetCheckResult:
    return check_result(checks.plan_schema_valid(workspace.layout.plan_path(partition_of(context))))


@dg.asset_check(asset=eval_plan, description=checks.plan_deterministic.__doc__)
def plan_deterministic(
    context: dg.AssetCheckExecutionContext, workspace: GymWorkspace
) -> dg.AssetCheckResult:
    name = partition_of(context)
    benchmark = workspace.catalog().get(name)
    return check_result(checks.plan_deterministic(workspace.layout.plan_path(name), benchmark))


@dg.asset_check(asset=eval_plan, blocking=True, description=checks.plan_covers_taskset.__doc__)
def plan_covers_taskset(
    context: dg.AssetCheckExecutionContext, workspace: GymWorkspace
) -> dg.AssetCheckResult:
    name = partition_of(context)
    benchmark = workspace.catalog().get(name)
    collated = collated_path(workspace.layout.taskset_dir(name), benchmark)
    plan = load_plan(workspace.layout.plan_path(name))
    return check_result(checks.plan_covers_taskset(plan, collated))


@dg.asset_check(asset=eval_plan, description=checks.plan_drift.__doc__)
def plan_drift(
    context: dg.AssetCheckExecutionContext, workspace: GymWorkspace
) -> dg.AssetCheckResult:
    name = partition_of(context)
    layout = workspace.layout
    previous = load_previous(layout.previous_plan_path(name))
    return check_result(checks.plan_drift(previous, load_plan(layout.plan_path(name))))
