"""Asset checks on ``rollouts``, run as one step: coverage, input digests and the budget of
unmeasured rollouts (masked, failed or never run) block; evidence is an error."""

from collections.abc import Iterator
from functools import cached_property

import dagster as dg

from gym_assets.defs.check_suites import CheckSuite, SuiteCheck
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.rollouts.assets import dimensions
from gym_assets.defs.rollouts.resources import HarnessRunner
from gym_assets.defs.rollouts.shards import rollouts
from gym_assets.plans.model import Plan, load_plan
from gym_assets.rollouts.collection import checks
from gym_assets.rollouts.collection.files import RunFiles


class RunInputs:
    """What the rollouts checks read, each read at most once."""

    def __init__(self, workspace: GymWorkspace, runner: HarnessRunner, partition: str):
        benchmark, harness = dimensions(partition)
        self.workspace, self.runner, self.benchmark = workspace, runner, benchmark
        self.files = RunFiles(workspace.paths.rollouts_run_dir(benchmark, harness))

    @cached_property
    def plan(self) -> Plan:
        return load_plan(self.workspace.paths.plan_path(self.benchmark))

    @cached_property
    def taskset(self) -> str:
        return self.workspace.catalog().get(self.benchmark).taskset


SUITE = CheckSuite[RunInputs](
    rollouts,
    (
        SuiteCheck(
            checks.rollouts_cover_plan, lambda r: (r.plan, r.files, r.taskset), blocking=True
        ),
        SuiteCheck(checks.inputs_match_plan, lambda r: (r.plan, r.files, r.taskset), blocking=True),
        SuiteCheck(
            checks.unmeasured_share,
            lambda r: (r.files, r.taskset, r.runner.max_unmeasured_share),
            blocking=True,
        ),
        SuiteCheck(checks.evidence_present, lambda r: (r.files,)),
    ),
)


@dg.multi_asset_check(
    specs=SUITE.specs(),
    can_subset=True,
    description="The checks of a rollouts run: coverage, input digests, the unmeasured share "
    "(masked, failed or never run) against its budget, evidence.",
)
def rollouts_checks(
    context: dg.AssetCheckExecutionContext,
    workspace: GymWorkspace,
    harness_runner: HarnessRunner,
) -> Iterator[dg.AssetCheckResult]:
    yield from SUITE.results(context, lambda key: RunInputs(workspace, harness_runner, key))
