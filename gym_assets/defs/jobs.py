"""Jobs. Selecting assets selects their checks too, so blocking checks gate each step."""

import dagster as dg

benchmark_job = dg.define_asset_job(
    "benchmark_job",
    selection=dg.AssetSelection.assets("prepared_benchmark", "collated_taskset", "eval_plan"),
    description="Prepare, collate and plan one benchmark partition, with every check; a failed "
    "blocking check on the taskset stops the plan.",
)
