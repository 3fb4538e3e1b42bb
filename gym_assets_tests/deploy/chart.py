"""deploy/k8s/ read the way the Dagster Helm chart (1.13.27) reads it, for the offline checks.

No Helm, no chart and no cluster here, so the chart's templates cannot run. What they do with the
keys these values use is small and stable, and is restated here from the chart's instance
template and its values models: the K8sRunLauncher block becomes the instance's `run_launcher`
config (camelCase keys to snake_case, plus the settings the chart itself fills in), and the code
location's deployment becomes one container. Keys the chart does not know are refused here as
the chart's schema refuses them, so a misspelt key fails a test instead of being ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "k8s"
VALUES = DEPLOY / "values.yaml"
DOCKERFILE = DEPLOY / "Dockerfile"
KUBERNETES_VERSION = "1.37.0"  # the newest schema kubernetes-validate bundles

# The chart's K8sRunLauncherConfig fields and the run launcher config key each becomes.
LAUNCHER_KEYS = {
    "image": "job_image",
    "imagePullPolicy": "image_pull_policy",
    "jobNamespace": "job_namespace",
    "loadInclusterConfig": "load_incluster_config",
    "kubeconfigFile": "kubeconfig_file",
    "envConfigMaps": "env_config_maps",
    "envSecrets": "env_secrets",
    "envVars": "env_vars",
    "volumeMounts": "volume_mounts",
    "volumes": "volumes",
    "labels": "labels",
    "failPodOnRunFailure": "fail_pod_on_run_failure",
    "resources": "resources",
    "schedulerName": "scheduler_name",
    "securityContext": "security_context",
    "runK8sConfig": "run_k8s_config",
}
RUN_K8S_CONFIG_KEYS = {
    "containerConfig": "container_config",
    "podSpecConfig": "pod_spec_config",
    "podTemplateSpecMetadata": "pod_template_spec_metadata",
    "jobSpecConfig": "job_spec_config",
    "jobMetadata": "job_metadata",
}
# The chart's values, as far as these values use them: each mapping lists the keys the chart
# accepts there (ANY: whatever is below is the chart's or Kubernetes' business, checked elsewhere;
# a one-item list: a list of that shape). Blocks these values do not touch are ANY.
ANY = None
USER_DEPLOYMENT = dict.fromkeys(
    (
        "name", "image", "port", "dagsterApiGrpcArgs", "codeServerArgs",
        "includeConfigInLaunchedRuns", "env", "envConfigMaps", "envSecrets", "annotations",
        "nodeSelector", "affinity", "tolerations", "podSecurityContext", "securityContext",
        "resources", "livenessProbe", "readinessProbe", "startupProbe", "labels", "volumeMounts",
        "volumes", "schedulerName",
    ),
    ANY,
) | {"includeConfigInLaunchedRuns": {"enabled": ANY}}  # fmt: skip
TAG_LIMIT = {"key": ANY, "value": ANY, "limit": ANY}
CHART_KEYS: dict[str, Any] = dict.fromkeys(
    (
        "dagsterWebserver", "postgresql", "generatePostgresqlPasswordSecret",
        "generateCeleryConfigSecret", "rabbitmq", "redis", "flower", "ingress", "imagePullSecrets",
        "computeLogManager", "scheduler", "runLauncher", "pythonLogs", "dagsterDaemon", "busybox",
        "migrate", "telemetry", "serviceAccount", "global", "retention", "concurrency",
        "additionalInstanceConfig", "dagster-user-deployments",
    ),
    ANY,
) | {
    "dagster-user-deployments": {
        "enabled": ANY, "enableSubchart": ANY, "imagePullSecrets": ANY,
        "deployments": [USER_DEPLOYMENT],
    },
    "postgresql": dict.fromkeys(
        ("postgresqlScheme", "image", "enabled", "postgresqlHost", "postgresqlUsername",
         "postgresqlPassword", "postgresqlDatabase", "postgresqlParams", "service"),
        ANY,
    ) | {"service": {"port": ANY}},
    "global": dict.fromkeys(
        ("postgresqlSecretName", "dagsterHome", "serviceAccountName", "celeryConfigSecretName",
         "dagsterInstanceConfigMap"),
        ANY,
    ),
    "runLauncher": {
        "type": ANY,
        "config": {
            "k8sRunLauncher": dict.fromkeys(LAUNCHER_KEYS, ANY)
            | {"runK8sConfig": dict.fromkeys(RUN_K8S_CONFIG_KEYS, ANY)},
            "celeryK8sRunLauncher": ANY, "customRunLauncher": ANY,
        },
    },
    "concurrency": {
        "enabled": ANY,
        "pools": {"defaultLimit": ANY, "granularity": ANY, "opGranularityRunBuffer": ANY},
        "runs": {"maxConcurrentRuns": ANY, "tagConcurrencyLimits": [TAG_LIMIT]},
    },
    "dagsterDaemon": dict.fromkeys(
        ("schedulerName", "volumeMounts", "volumes", "enabled", "image", "runCoordinator",
         "heartbeatTolerance", "env", "envConfigMaps", "envSecrets", "deploymentLabels", "labels",
         "nodeSelector", "affinity", "tolerations", "podSecurityContext", "securityContext",
         "resources", "livenessProbe", "readinessProbe", "startupProbe", "annotations",
         "runMonitoring", "runRetries", "sensors", "schedules"),
        ANY,
    ) | {
        "runCoordinator": {
            "enabled": ANY, "type": ANY,
            "config": {
                "queuedRunCoordinator": dict.fromkeys(
                    ("maxConcurrentRuns", "tagConcurrencyLimits", "dequeueIntervalSeconds",
                     "dequeueNumWorkers", "dequeueUseThreads", "blockOpConcurrencyLimitedRuns"),
                    ANY,
                ),
                "customRunCoordinator": ANY,
            },
        },
    },
    "telemetry": {"enabled": ANY},
}  # fmt: skip


def unknown_keys(value: Any, shape: Any = CHART_KEYS, at: str = "") -> list[str]:
    """The paths in ``value`` that the chart has no key for."""
    if shape is ANY:
        return []
    if isinstance(shape, list):
        assert isinstance(value, list), f"{at}: a list expected"
        return [
            p for i, item in enumerate(value) for p in unknown_keys(item, shape[0], f"{at}[{i}]")
        ]
    assert isinstance(value, dict), f"{at}: a mapping expected"
    found = []
    for key, below in value.items():
        where = f"{at}.{key}" if at else key
        found += unknown_keys(below, shape[key], where) if key in shape else [where]
    return found


# What the chart's pods get from it: the environment the launcher config reads, the service
# account and the release namespace.
CHART_ENVIRONMENT = {
    "DAGSTER_HOME": "/opt/dagster/dagster_home",
    "DAGSTER_K8S_INSTANCE_CONFIG_MAP": "gym-assets-dagster-instance",
    "DAGSTER_K8S_PG_PASSWORD_SECRET": "gym-assets-postgresql",
    "DAGSTER_K8S_PIPELINE_RUN_ENV_CONFIGMAP": "gym-assets-dagster-pipeline-env",
}
SERVICE_ACCOUNT = "gym-assets-dagster"
RELEASE_NAMESPACE = "gym-assets"


def values(text: str | None = None) -> dict[str, Any]:
    """The Helm values (``text`` instead of deploy/k8s/values.yaml, for the mutation checks)."""
    loaded = yaml.safe_load(VALUES.read_text("utf-8") if text is None else text)
    assert isinstance(loaded, dict)
    return loaded


def launcher_values(helm: dict[str, Any]) -> dict[str, Any]:
    launcher = helm["runLauncher"]
    assert launcher["type"] == "K8sRunLauncher", launcher["type"]
    return launcher["config"]["k8sRunLauncher"]


def _renamed(block: dict[str, Any], keys: dict[str, str], where: str) -> dict[str, Any]:
    unknown = sorted(set(block) - set(keys))
    assert not unknown, f"{where}: the chart has no key {', '.join(unknown)}"
    return {keys[key]: value for key, value in block.items()}


def run_launcher_config(helm: dict[str, Any]) -> dict[str, Any]:
    """The instance's ``run_launcher.config`` the chart renders from ``runLauncher``."""
    block = dict(launcher_values(helm))
    config = _renamed(block, LAUNCHER_KEYS, "runLauncher.config.k8sRunLauncher")
    config.setdefault("job_namespace", RELEASE_NAMESPACE)
    if not config["job_namespace"]:
        config["job_namespace"] = RELEASE_NAMESPACE
    if "run_k8s_config" in config:
        config["run_k8s_config"] = _renamed(
            config["run_k8s_config"], RUN_K8S_CONFIG_KEYS, "runK8sConfig"
        )
    config["env_config_maps"] = [
        {"env": "DAGSTER_K8S_PIPELINE_RUN_ENV_CONFIGMAP"},
        *(item["name"] for item in config.get("env_config_maps", [])),
    ]
    config["env_secrets"] = [item["name"] for item in config.get("env_secrets", [])]
    if not config["env_secrets"]:
        del config["env_secrets"]
    return config | {
        "service_account_name": SERVICE_ACCOUNT,
        "dagster_home": {"env": "DAGSTER_HOME"},
        "instance_config_map": {"env": "DAGSTER_K8S_INSTANCE_CONFIG_MAP"},
        "postgres_password_secret": {"env": "DAGSTER_K8S_PG_PASSWORD_SECRET"},
    }


def user_deployment(helm: dict[str, Any]) -> dict[str, Any]:
    """The one code location deployment."""
    subchart = helm["dagster-user-deployments"]
    assert subchart["enabled"] and subchart["enableSubchart"]
    (deployment,) = subchart["deployments"]
    return deployment


def image_reference(deployment: dict[str, Any]) -> str:
    return f"{deployment['image']['repository']}:{deployment['image']['tag']}"


def manifests() -> dict[str, dict[str, Any]]:
    """Every plain Kubernetes manifest shipped in deploy/k8s/, by file name."""
    found = {}
    for path in sorted(DEPLOY.glob("*.yaml")):
        loaded = yaml.safe_load(path.read_text("utf-8"))
        if isinstance(loaded, dict) and "kind" in loaded:
            found[path.name] = loaded
    return found
