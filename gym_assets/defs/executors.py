"""Where the rollouts job's steps run, chosen by the deployment, not by the code.

``GYM_ASSETS_EXECUTOR`` (read where the code location loads, so the daemon, the run and every
worker agree) picks one of Dagster's own executors:

- ``in_process`` (default): the run's process, as on one machine (docs/operations.md);
- ``celery``: a Celery task per step on the workers listening to the broker named by
  ``GYM_ASSETS_CELERY_BROKER`` (``dagster-celery``; docs/scale-out.md), configured by
  ``celery_executor.yaml`` beside this module, the file the workers are started with too;
- ``k8s``: a Kubernetes job per step (``dagster-k8s``; ``deploy/k8s/``, docs/scale-out.md).

``GYM_ASSETS_ROLLOUT_SHARDS``, read the same way, splits each rollouts partition into that many
shard steps (``defs/rollouts/shards.py``).

The integrations are imported only when chosen.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg

from gym_assets.config.yaml_source import parse_yaml_file
from gym_assets.errors import UserError
from gym_assets.rollouts.shards import MAX_SHARDS

EXECUTOR_VARIABLE = "GYM_ASSETS_EXECUTOR"
EXECUTORS = ("in_process", "celery", "k8s")
SHARDS_VARIABLE = "GYM_ASSETS_ROLLOUT_SHARDS"
CELERY_CONFIG = Path(__file__).with_name("celery_executor.yaml")
"""The executor's config under ``execution.config``: the file ``dagster-celery worker start -y``
takes, so the workers use the broker, backend and Celery settings the runs use."""

# The shared data root as deploy/k8s/ mounts it in every pod: the claim of
# deploy/k8s/data-pvc.yaml at DATA_MOUNT, the data root one level below (a volume's root may hold
# the filesystem's own lost+found). deploy/k8s/values.yaml names the same three.
DATA_VOLUME = "gym-assets-data"
DATA_MOUNT = "/data"
DATA_ROOT = f"{DATA_MOUNT}/gym_assets"

# Every step pod of a run: the data volume (identical to the run launcher's and the code
# location's, so Dagster's merge keeps one copy), the locations and the executor choice copied
# from the run pod's environment (a bare name takes the run pod's value), so a step loads the same
# code location as its run. Namespace, image, service account and the Postgres secret come from
# the run launcher. A run's steps (the rollouts, then its checks) depend on each other, so one pod
# at a time (a sharded partition: one per shard, `rollouts_executor`); how many partitions
# collect at once is the instance's `rollouts` pool, across runs.
# A step that asks for nothing more gets a small pod; the rollouts step asks for more itself
# (its `dagster-k8s/config` op tag, defs/rollouts/assets.py).
K8S_EXECUTOR_CONFIG: dict[str, Any] = {
    "max_concurrent": 1,
    "env_vars": ["GYM_ASSETS_CONFIGS", "GYM_ASSETS_DATA_ROOT", EXECUTOR_VARIABLE],
    "volumes": [{"name": DATA_VOLUME, "persistentVolumeClaim": {"claimName": DATA_VOLUME}}],
    "volume_mounts": [{"name": DATA_VOLUME, "mountPath": DATA_MOUNT}],
    "resources": {
        "requests": {"cpu": "250m", "memory": "512Mi"},
        "limits": {"memory": "1Gi"},
    },
}

# The rollouts step's own pod (its `dagster-k8s/config` op tag): the run's gateway process, the
# agents and a bubblewrap sandbox per verification at once. Two cores keep the gateway and the
# agents each on a core, as on the 2-core machine the project is measured on; the memory limit
# stops a runaway episode before it takes the node down. Tune both to your harnesses.
ROLLOUTS_POD: dict[str, Any] = {
    "container_config": {
        "resources": {
            "requests": {"cpu": "2", "memory": "4Gi"},
            "limits": {"memory": "8Gi"},
        }
    }
}


def shard_count() -> int:
    """``$GYM_ASSETS_ROLLOUT_SHARDS`` (default 1): how many shards each rollouts partition is
    split into, the rollouts graph's shape (``defs/rollouts/shards.py``)."""
    value = os.environ.get(SHARDS_VARIABLE, "").strip() or "1"
    if not value.isdigit() or not 1 <= int(value) <= MAX_SHARDS:
        raise UserError(
            f"{SHARDS_VARIABLE}={value!r} is no shard count; use a whole number from 1 to "
            f"{MAX_SHARDS}"
        )
    return int(value)


def rollouts_executor() -> dg.ExecutorDefinition:
    """The executor named by ``$GYM_ASSETS_EXECUTOR`` (default ``in_process``)."""
    name = os.environ.get(EXECUTOR_VARIABLE, "in_process")
    if name == "in_process":
        return dg.in_process_executor
    if name == "celery":
        from dagster_celery import celery_executor

        config = parse_yaml_file(CELERY_CONFIG).data  # the one YAML loader, as for configs
        return celery_executor.configured(config["execution"]["config"])
    if name == "k8s":
        from dagster_k8s import k8s_job_executor

        # A sharded partition (defs/rollouts/shards.py): its step pods load the graph the run's
        # pod loaded (the count copied when the deployment sets one), and its shards, steps with
        # no order between them, run a pod each at once.
        config = {**K8S_EXECUTOR_CONFIG, "max_concurrent": shard_count()}
        if SHARDS_VARIABLE in os.environ:
            config["env_vars"] = [*K8S_EXECUTOR_CONFIG["env_vars"], SHARDS_VARIABLE]
        return k8s_job_executor.configured(config)
    raise UserError(
        f"{EXECUTOR_VARIABLE}={name!r} names no executor; use one of {', '.join(EXECUTORS)}"
    )
