"""Jobs. Selecting assets selects their checks too, so blocking checks gate each step.

Each job names its executor; why each has the one it has is in docs/operations.md (Executors).
"""

import dagster as dg

benchmark_job = dg.define_asset_job(
    "benchmark_job",
    selection=dg.AssetSelection.assets("prepared_benchmark", "collated_taskset", "eval_plan"),
    executor_def=dg.in_process_executor,
    description="Prepare, collate and plan one benchmark partition, with every check; a failed "
    "blocking check on the taskset stops the plan. Steps run in the run's process: each reads "
    "and writes a few files of our own and runs no model output, so a process per step would "
    "only add its start-up to every step.",
)
