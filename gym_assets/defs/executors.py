"""Where the rollouts job's steps run, chosen by the deployment, not by the code.

``GYM_ASSETS_EXECUTOR`` (read where the code location loads, so the daemon, the run and every
worker agree) picks one of Dagster's own executors:

- ``in_process`` (default): the run's process, as on one machine (docs/operations.md);
- ``celery``: a Celery task per step on the workers listening to the broker named by
  ``GYM_ASSETS_CELERY_BROKER`` (``dagster-celery``; docs/scale-out.md), configured by
  ``celery_executor.yaml`` beside this module, the file the workers are started with too;
- ``k8s``: a Kubernetes job per step (``dagster-k8s``; ``deploy/k8s/``).

The integrations are imported only when chosen.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import yaml

from gym_assets.errors import UserError

EXECUTOR_VARIABLE = "GYM_ASSETS_EXECUTOR"
EXECUTORS = ("in_process", "celery", "k8s")
CELERY_CONFIG = Path(__file__).with_name("celery_executor.yaml")
"""The executor's config under ``execution.config``: the file ``dagster-celery worker start -y``
takes, so the workers use the broker, backend and Celery settings the runs use."""


def rollouts_executor() -> dg.ExecutorDefinition:
    """The executor named by ``$GYM_ASSETS_EXECUTOR`` (default ``in_process``)."""
    name = os.environ.get(EXECUTOR_VARIABLE, "in_process")
    if name == "in_process":
        return dg.in_process_executor
    if name == "celery":
        from dagster_celery import celery_executor

        config = yaml.safe_load(CELERY_CONFIG.read_text(encoding="utf-8"))
        return celery_executor.configured(config["execution"]["config"])
    if name == "k8s":
        from dagster_k8s import k8s_job_executor

        return k8s_job_executor
    raise UserError(
        f"{EXECUTOR_VARIABLE}={name!r} names no executor; use one of {', '.join(EXECUTORS)}"
    )
