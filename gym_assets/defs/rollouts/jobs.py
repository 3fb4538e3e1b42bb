"""The rollouts job: one benchmark × harness partition with every check of the asset."""

import dagster as dg

from gym_assets.defs.executors import rollouts_executor

rollouts_job = dg.define_asset_job(
    "rollouts_job",
    selection=dg.AssetSelection.assets("rollouts"),
    executor_def=rollouts_executor(),
    description="Collect one benchmark × harness partition; coverage and input digests block. "
    "By default steps run in the run's process (`GYM_ASSETS_EXECUTOR` picks Celery workers or "
    "Kubernetes jobs instead, docs/scale-out.md): the heavy and untrusted parts of the rollouts "
    "step already run in processes of their own (the model gateway, harness CLIs, model-written "
    "code in the sandbox), and the checks only read the run's files.",
)
