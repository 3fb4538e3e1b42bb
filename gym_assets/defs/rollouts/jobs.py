"""The rollouts job: one benchmark × harness partition with every check of the asset."""

import dagster as dg

rollouts_job = dg.define_asset_job(
    "rollouts_job",
    selection=dg.AssetSelection.assets("rollouts"),
    executor_def=dg.in_process_executor,
    description="Collect one benchmark × harness partition; coverage and input digests block. "
    "Steps run in the run's process: the heavy and untrusted parts of the rollouts step already "
    "run in processes of their own (the model gateway, harness CLIs, model-written code in the "
    "sandbox), and the checks only read the run's files.",
)
