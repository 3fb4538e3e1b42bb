"""An asset's checks as one step: each check keeps its own name, description, history and
blocking, but the suite runs as a single op that reads what its checks share once.

A step costs Dagster a start and a success event on top of its checks' own, and on sqlite every
event is a committed write: one step per asset instead of one per check keeps a partition's
event log lean (docs/operations.md, "What a run writes").

Each check is partitioned like its asset (``AssetCheckSpec(partitions_def=...)``, a preview
feature of Dagster 1.13): an evaluation records the partition it judged, so a check's history
reads per benchmark or per harness. A run of the checks alone judges the partition it was
launched for; Dagster 1.13's "Execute all" on an asset's Checks tab launches them with none, and
such a run is declined with a warning that says how to run them (docs/operations.md, "Checks per
partition"), never a crash in the checks and never a verdict.
"""

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import dagster as dg

from gym_assets.check_outcome import CheckOutcome
from gym_assets.defs.metadata import check_result, markdown

Inputs = TypeVar("Inputs")
PARTITIONED_CHECK_WARNING = "Specifying a partitions_def on an AssetCheckSpec"


@dataclass(frozen=True)
class SuiteCheck(Generic[Inputs]):
    """A library check, and the arguments it takes from what the step read."""

    check: Callable[..., CheckOutcome]
    arguments: Callable[[Inputs], tuple[Any, ...]]
    blocking: bool = False

    @property
    def name(self) -> str:
        return self.check.__name__


@dataclass(frozen=True)
class CheckSuite(Generic[Inputs]):
    """The checks of one asset, in the order they run."""

    asset: dg.AssetsDefinition
    checks: tuple[SuiteCheck[Inputs], ...]

    def specs(self) -> list[dg.AssetCheckSpec]:
        """One spec per check, described by its library docstring, partitioned like the asset."""
        with warnings.catch_warnings():
            # Dagster flags partitioned checks as a preview; the choice is deliberate and
            # documented (docs/operations.md, "Checks per partition"), so the warning is noise.
            warnings.filterwarnings("ignore", message=PARTITIONED_CHECK_WARNING)
            return [
                dg.AssetCheckSpec(
                    c.name,
                    asset=self.asset,
                    blocking=c.blocking,
                    description=markdown(c.check.__doc__ or ""),
                    partitions_def=self.asset.partitions_def,
                )
                for c in self.checks
            ]

    def results(
        self, context: dg.AssetCheckExecutionContext, read: Callable[[str], Inputs]
    ) -> Iterator[dg.AssetCheckResult]:
        """The results of the checks this run selected (a run may select one check alone), on
        the inputs ``read`` gives for the run's partition."""
        if not context.has_partition_key:
            context.log.warning(self.no_partition_message())
            return
        inputs = read(context.partition_key)
        selected = {key.name for key in context.selected_asset_check_keys}
        for check in self.checks:
            if check.name in selected:
                outcome = check.check(*check.arguments(inputs))
                if outcome.applicable:
                    yield check_result(outcome, self.asset.key, check.name)
                else:
                    # No evaluation: the UI shows the check as skipped for this partition, and
                    # the run's log says why.
                    context.log.info(f"{check.name}: {outcome.description}")

    def no_partition_message(self) -> str:
        asset = self.asset.key.to_user_string()
        return (
            f"No partition, so no check of {asset} ran: they judge one partition at a time, "
            "and this run has none (Dagster 1.13's \"Execute all\" on an asset's Checks tab "
            "launches a partitioned asset's checks without one). To check one partition: in "
            f"the Launchpad of {asset}'s job pick the partition and select only the op "
            f"`{self.asset.key.path[-1]}_checks`; or materialize {asset} for the partitions, "
            'which runs their checks (docs/operations.md, "Checks per partition").'
        )
