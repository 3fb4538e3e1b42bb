"""``p0_gate`` on ``harness_conformance``: blocking, ERROR; it fails naming the failing checks
(turned round for a negative control, which the registry marks ``expected_to_fail``)."""

from collections.abc import Iterator

import dagster as dg

from gym_assets.defs.check_suites import CheckSuite, SuiteCheck
from gym_assets.defs.conformance.assets import harness_conformance
from gym_assets.defs.resources import GymWorkspace
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.suite import harness_runs


class GateInputs:
    def __init__(self, workspace: GymWorkspace, harness: str):
        self.harness = harness
        self.latest = harness_runs.latest_run(workspace.paths.conformance_runs_dir(harness))
        entry = load_harnesses(workspace.catalog().loaded).get(harness)
        self.expected_to_fail = entry is not None and entry.expected_to_fail


SUITE = CheckSuite[GateInputs](
    harness_conformance,
    (
        SuiteCheck(
            harness_runs.p0_gate,
            lambda g: (g.latest, g.harness, g.expected_to_fail),
            blocking=True,
        ),
    ),
)


@dg.multi_asset_check(
    specs=SUITE.specs(),
    can_subset=True,
    description="The P0 gate of the harness's latest conformance run.",
)
def harness_conformance_checks(
    context: dg.AssetCheckExecutionContext, workspace: GymWorkspace
) -> Iterator[dg.AssetCheckResult]:
    yield from SUITE.results(context, lambda harness: GateInputs(workspace, harness))
