"""The run pod and a step pod of this deployment, rendered offline with dagster-k8s's own builders.

``K8sRunLauncher`` and ``k8s_job_executor`` need a cluster to start, so the tests rebuild what
each would submit from the same public pieces they use: the run launcher's settings (from the
Helm values, as the chart renders them), the executor's config, the step's ``dagster-k8s/config``
tag, merged in the order the executor merges them (run launcher, then executor, then the step's
tag), then ``construct_dagster_k8s_job``. The result is a plain Kubernetes Job manifest.
"""

from __future__ import annotations

import json
from typing import Any

import kubernetes
from dagster_k8s.container_context import K8sContainerContext
from dagster_k8s.job import (
    DagsterK8sJobConfig,
    UserDefinedDagsterK8sConfig,
    construct_dagster_k8s_job,
    get_user_defined_k8s_config,
)

from gym_assets_tests.deploy import chart


def _resolved(value: Any) -> Any:
    """``{"env": NAME}`` as Dagster's config system resolves it in a chart pod."""
    if isinstance(value, dict) and set(value) == {"env"}:
        return chart.CHART_ENVIRONMENT[value["env"]]
    if isinstance(value, list):
        return [_resolved(item) for item in value]
    return value


# The settings a run launcher's or an executor's config shares with ``K8sContainerContext``.
SHARED_SETTINGS = (
    "image_pull_policy",
    "service_account_name",
    "env_config_maps",
    "env_secrets",
    "env_vars",
    "volume_mounts",
    "volumes",
    "labels",
    "resources",
    "scheduler_name",
    "security_context",
)


def container_context(config: dict[str, Any], raw_config_key: str) -> K8sContainerContext:
    """What a run's pods take from the run launcher's config (``raw_config_key``
    ``run_k8s_config``), or every step's pod from the executor's (``step_k8s_config``), as
    ``K8sContainerContext.create_for_run`` and ``k8s_job_executor`` build it."""
    config = {key: _resolved(value) for key, value in config.items()}
    return K8sContainerContext(
        **{name: config.get(name) for name in SHARED_SETTINGS},
        namespace=config.get("job_namespace"),
        run_k8s_config=UserDefinedDagsterK8sConfig.from_dict(config.get(raw_config_key, {})),
    )


def tag_context(tags: dict[str, Any]) -> K8sContainerContext:
    """A step's ``dagster-k8s/config`` tag (Dagster keeps op tag values as JSON strings)."""
    as_strings = {k: v if isinstance(v, str) else json.dumps(v) for k, v in tags.items()}
    return K8sContainerContext(run_k8s_config=get_user_defined_k8s_config(as_strings))


def job_manifest(
    context: K8sContainerContext, launcher: dict[str, Any], image: str, component: str
) -> dict[str, Any]:
    """The Kubernetes Job a run launcher or step handler would submit, as plain data."""
    job_config = DagsterK8sJobConfig(
        job_image=image,
        dagster_home=_resolved(launcher["dagster_home"]),
        instance_config_map=_resolved(launcher["instance_config_map"]),
        postgres_password_secret=_resolved(launcher["postgres_password_secret"]),
    )
    job = construct_dagster_k8s_job(
        job_config=job_config,
        args=["dagster", "api", "execute_run", "{}"],
        job_name=f"dagster-{component}-0123456789abcdef",
        user_defined_k8s_config=context.run_k8s_config,
        component=component,
        labels={"dagster/job": "rollouts_job"},
    )
    manifest = kubernetes.client.ApiClient().sanitize_for_serialization(job)
    return {"apiVersion": "batch/v1", "kind": "Job", **manifest}
