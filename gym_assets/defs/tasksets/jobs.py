"""Jobs over the taskset assets (their checks are included with the assets)."""

import dagster as dg

taskset_job = dg.define_asset_job(
    "taskset_job",
    selection=dg.AssetSelection.assets("prepared_benchmark", "collated_taskset"),
    description="Prepare and collate one benchmark partition, with its checks.",
)
