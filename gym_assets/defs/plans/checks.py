"""Asset checks on ``eval_plan``, run as one step: schema and coverage block; drift is an
advisory."""

from collections.abc import Iterator
from functools import cached_property

import dagster as dg

from gym_assets.defs.check_suites import CheckSuite, SuiteCheck
from gym_assets.defs.plans.assets import eval_plan
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.tasksets.checks import TasksetInputs
from gym_assets.plans import checks
from gym_assets.plans.model import Plan, load_plan
from gym_assets.plans.publish import load_previous


class PlanInputs(TasksetInputs):
    """What the plan checks read (the taskset's files and the plans), each read at most once."""

    def __init__(self, workspace: GymWorkspace, name: str):
        super().__init__(workspace, name)
        self.path = workspace.paths.plan_path(name)

    @cached_property
    def plan(self) -> Plan:
        return load_plan(self.path)

    @cached_property
    def previous(self) -> Plan | None:
        return load_previous(self.workspace.paths.previous_plan_path(self.name))


SUITE = CheckSuite[PlanInputs](
    eval_plan,
    (
        SuiteCheck(checks.plan_schema_valid, lambda p: (p.path,), blocking=True),
        SuiteCheck(checks.plan_deterministic, lambda p: (p.path, p.benchmark)),
        SuiteCheck(checks.plan_covers_taskset, lambda p: (p.plan, p.collated), blocking=True),
        SuiteCheck(checks.plan_drift, lambda p: (p.previous, p.plan)),
    ),
)


@dg.multi_asset_check(
    specs=SUITE.specs(),
    can_subset=True,
    description="The checks of the eval plan: schema, determinism, coverage, drift.",
)
def eval_plan_checks(
    context: dg.AssetCheckExecutionContext, workspace: GymWorkspace
) -> Iterator[dg.AssetCheckResult]:
    yield from SUITE.results(context, lambda name: PlanInputs(workspace, name))
