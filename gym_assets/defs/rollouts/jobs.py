"""The rollouts job: one benchmark × harness partition with every check of the asset."""

import dagster as dg

rollouts_job = dg.define_asset_job(
    "rollouts_job",
    selection=dg.AssetSelection.assets("rollouts"),
    description="Collect one benchmark × harness partition; coverage and input digests block.",
)
