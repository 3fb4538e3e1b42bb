"""Asset checks on ``collated_taskset``. Blocking ERROR checks stop the plan downstream."""

import json

import dagster as dg

from gym_assets.defs.metadata import check_result, partition_of
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.tasksets.assets import collated_taskset
from gym_assets.tasks import checks
from gym_assets.tasks.pipeline import REPORT_NAME, collated_path


def _report(workspace: GymWorkspace, name: str) -> dict:
    return json.loads((workspace.layout.taskset_dir(name) / REPORT_NAME).read_text("utf-8"))


@dg.asset_check(asset=collated_taskset, blocking=True, description=checks.task_data_valid.__doc__)
def task_data_valid(
    context: dg.AssetCheckExecutionContext, workspace: GymWorkspace
) -> dg.AssetCheckResult:
    return check_result(checks.task_data_valid(_report(workspace, partition_of(context))))


@dg.asset_check(asset=collated_taskset, blocking=True, description=checks.task_ids_unique.__doc__)
def task_ids_unique(
    context: dg.AssetCheckExecutionContext, workspace: GymWorkspace
) -> dg.AssetCheckResult:
    name = partition_of(context)
    benchmark = workspace.catalog().get(name)
    path = collated_path(workspace.layout.taskset_dir(name), benchmark)
    return check_result(checks.task_ids_unique(path, _report(workspace, name)))


@dg.asset_check(asset=collated_taskset, blocking=True, description=checks.route_resolves.__doc__)
def route_resolves(
    context: dg.AssetCheckExecutionContext, workspace: GymWorkspace
) -> dg.AssetCheckResult:
    catalog = workspace.catalog()
    return check_result(checks.route_resolves(catalog, catalog.get(partition_of(context))))


@dg.asset_check(asset=collated_taskset, description=checks.stable_task_ids.__doc__)
def stable_task_ids(
    context: dg.AssetCheckExecutionContext, workspace: GymWorkspace
) -> dg.AssetCheckResult:
    name = partition_of(context)
    benchmark = workspace.catalog().get(name)
    path = collated_path(workspace.layout.taskset_dir(name), benchmark)
    return check_result(checks.stable_task_ids(path))
