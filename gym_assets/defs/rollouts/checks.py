"""Asset checks on ``rollouts``: coverage and input digests block; a masked share above the
budget fails (an error, not blocking); failure rate is advisory."""

from collections.abc import Callable

import dagster as dg

from gym_assets.check_outcome import CheckOutcome
from gym_assets.defs.metadata import check_result, partition_of
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.rollouts.assets import dimensions, rollouts
from gym_assets.defs.rollouts.resources import HarnessRunner
from gym_assets.plans.model import load_plan
from gym_assets.rollouts.collection import checks
from gym_assets.rollouts.collection.files import RunFiles, run_dir


def _run(context: dg.AssetCheckExecutionContext, workspace: GymWorkspace) -> tuple[str, RunFiles]:
    benchmark, harness = dimensions(partition_of(context))
    return benchmark, RunFiles(run_dir(workspace.layout.root, benchmark, harness))


@dg.asset_check(asset=rollouts, blocking=True, description=checks.rollouts_cover_plan.__doc__)
def rollouts_cover_plan(
    context: dg.AssetCheckExecutionContext, workspace: GymWorkspace
) -> dg.AssetCheckResult:
    benchmark, files = _run(context, workspace)
    plan = load_plan(workspace.layout.plan_path(benchmark))
    taskset = workspace.catalog().get(benchmark).taskset
    return check_result(checks.rollouts_cover_plan(plan, files, taskset))


@dg.asset_check(asset=rollouts, blocking=True, description=checks.inputs_match_plan.__doc__)
def inputs_match_plan(
    context: dg.AssetCheckExecutionContext, workspace: GymWorkspace
) -> dg.AssetCheckResult:
    benchmark, files = _run(context, workspace)
    plan = load_plan(workspace.layout.plan_path(benchmark))
    taskset = workspace.catalog().get(benchmark).taskset
    return check_result(checks.inputs_match_plan(plan, files, taskset))


def _budget_check(
    check: Callable[[RunFiles, str, float], CheckOutcome], budget: str
) -> dg.AssetChecksDefinition:
    """An asset check of the run's share of some outcome against ``HarnessRunner.<budget>``."""

    @dg.asset_check(asset=rollouts, name=check.__name__, description=check.__doc__)
    def _check(
        context: dg.AssetCheckExecutionContext,
        workspace: GymWorkspace,
        harness_runner: HarnessRunner,
    ) -> dg.AssetCheckResult:
        benchmark, files = _run(context, workspace)
        taskset = workspace.catalog().get(benchmark).taskset
        return check_result(check(files, taskset, getattr(harness_runner, budget)))

    return _check


failure_rate = _budget_check(checks.failure_rate, "max_failure_rate")
masked_share = _budget_check(checks.masked_share, "max_masked_share")


@dg.asset_check(asset=rollouts, description=checks.evidence_present.__doc__)
def evidence_present(
    context: dg.AssetCheckExecutionContext, workspace: GymWorkspace
) -> dg.AssetCheckResult:
    return check_result(checks.evidence_present(_run(context, workspace)[1]))
