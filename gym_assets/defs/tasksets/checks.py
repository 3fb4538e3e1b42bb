"""Asset checks on ``collated_taskset``, run as one step. Blocking ERROR checks stop the plan
downstream."""

import json
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

import dagster as dg

from gym_assets.defs.check_suites import CheckSuite, SuiteCheck
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.tasksets.assets import collated_taskset
from gym_assets.tasks import checks
from gym_assets.tasks.catalog import Benchmark, Catalog
from gym_assets.tasks.pipeline import REPORT_NAME, collated_path


class TasksetInputs:
    """What the taskset checks read, each read at most once."""

    def __init__(self, workspace: GymWorkspace, name: str):
        self.workspace, self.name = workspace, name

    @cached_property
    def catalog(self) -> Catalog:
        return self.workspace.catalog()

    @cached_property
    def benchmark(self) -> Benchmark:
        return self.catalog.get(self.name)

    @cached_property
    def report(self) -> dict[str, Any]:
        path = self.workspace.paths.taskset_dir(self.name) / REPORT_NAME
        return json.loads(path.read_text("utf-8"))

    @cached_property
    def collated(self) -> Path:
        return collated_path(self.workspace.paths.taskset_dir(self.name), self.benchmark)


SUITE = CheckSuite[TasksetInputs](
    collated_taskset,
    (
        SuiteCheck(checks.task_data_valid, lambda t: (t.report,), blocking=True),
        SuiteCheck(checks.task_ids_unique, lambda t: (t.collated, t.report), blocking=True),
        SuiteCheck(checks.route_resolves, lambda t: (t.catalog, t.benchmark), blocking=True),
        SuiteCheck(checks.stable_task_ids, lambda t: (t.collated,)),
    ),
)


@dg.multi_asset_check(
    specs=SUITE.specs(),
    can_subset=True,
    description="The checks of the collated taskset: task data, IDs, route, ID stability.",
)
def collated_taskset_checks(
    context: dg.AssetCheckExecutionContext, workspace: GymWorkspace
) -> Iterator[dg.AssetCheckResult]:
    yield from SUITE.results(context, lambda name: TasksetInputs(workspace, name))
