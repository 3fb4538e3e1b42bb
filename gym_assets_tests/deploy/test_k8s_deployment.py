"""deploy/k8s/values.yaml, the rollouts job's k8s executor and the pods they make, checked offline.

The chart's own values schema is not available offline for 1.13.27 (docs/scale-out.md,
Kubernetes), so each part is checked against the schema that owns it: the run launcher block against
``K8sRunLauncher.config_type()``, the executor against the rollouts job's run config schema
(``dg.validate_run_config``), and every pod spec (the code server, a run pod, a rollouts step pod)
against Kubernetes' own schemas (``kubernetes-validate``, strict: unknown fields fail).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import dagster as dg
import kubernetes_validate
import pytest
import yaml
from dagster_k8s import K8sRunLauncher
from kubernetes.utils import parse_quantity

from gym_assets.defs import executors
from gym_assets.defs.rollouts.assets import rollouts
from gym_assets.local_dagster import INSTANCE_DIR
from gym_assets.workspace import Workspace
from gym_assets_tests.deploy import chart, pods

RESOLVED_EXECUTOR = """
import json, dagster as dg
from gym_assets.definitions import defs
job = defs.resolve_job_def("rollouts_job")
resolved = dg.validate_run_config(job, {})
print(json.dumps({"executor": job.executor_def.name, "config": resolved["execution"]}))
"""


@pytest.fixture(scope="module")
def helm() -> dict[str, Any]:
    return chart.values()


@pytest.fixture(scope="module")
def k8s_executor_config() -> dict[str, Any]:
    """The rollouts job's executor config, resolved by Dagster from the code location loaded the
    way every pod of the deployment loads it (a process of its own: the executor is chosen when
    the definitions are imported)."""
    env = {**os.environ, "GYM_ASSETS_EXECUTOR": "k8s"}
    done = subprocess.run(
        [sys.executable, "-c", RESOLVED_EXECUTOR],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    resolved = json.loads(done.stdout.strip().splitlines()[-1])
    assert resolved["executor"] == "k8s"
    (config,) = resolved["config"].values()
    return config


def _valid(manifest: dict[str, Any]) -> None:
    """Kubernetes' schema, and the resource quantities the schema leaves as free strings."""
    kubernetes_validate.validate(manifest, chart.KUBERNETES_VERSION, strict=True)
    spec = manifest["spec"]
    for container in spec.get("template", {}).get("spec", spec)["containers"]:
        for amounts in container.get("resources", {}).values():
            for amount in amounts.values():
                parse_quantity(amount)  # ValueError on "two"


def _env(container: dict[str, Any]) -> dict[str, str]:
    names = [item["name"] for item in container.get("env", [])]
    assert len(names) == len(set(names)), f"an environment variable set twice: {names}"
    return {item["name"]: item.get("value") for item in container.get("env", [])}


def _launcher_env(helm: dict[str, Any]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in chart.launcher_values(helm)["envVars"])


def test_every_key_is_one_the_chart_has(helm):
    assert chart.unknown_keys(helm) == []


def test_a_misspelt_key_is_found_wherever_it_is(helm):
    broken = {**helm, "concurrency": {**helm["concurrency"], "pool": {"defaultLimit": 2}}}
    deployment = {**chart.user_deployment(helm), "volumeMount": []}
    broken["dagster-user-deployments"] = {**helm["dagster-user-deployments"]}
    broken["dagster-user-deployments"]["deployments"] = [deployment]
    assert chart.unknown_keys(broken) == [
        "dagster-user-deployments.deployments[0].volumeMount",
        "concurrency.pool",
    ]


def test_the_run_launcher_block_is_a_valid_k8s_run_launcher_config(helm, monkeypatch):
    for name, value in chart.CHART_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)

    @dg.op(config_schema=K8sRunLauncher.config_type())
    def run_launcher() -> None: ...

    @dg.job
    def instance() -> None:
        run_launcher()

    config = chart.run_launcher_config(helm)
    dg.validate_run_config(instance, {"ops": {"run_launcher": {"config": config}}})


def test_the_rollouts_job_gets_the_projects_k8s_executor(k8s_executor_config):
    config = k8s_executor_config
    assert config["max_concurrent"] == 1
    assert "job_namespace" not in config, "steps go where the run launcher puts runs"
    assert config["volumes"] == executors.K8S_EXECUTOR_CONFIG["volumes"]
    assert config["volume_mounts"] == executors.K8S_EXECUTOR_CONFIG["volume_mounts"]
    assert set(config["env_vars"]) == {"GYM_ASSETS_CONFIGS", "GYM_ASSETS_DATA_ROOT"} | {
        executors.EXECUTOR_VARIABLE
    }
    assert config["resources"]["requests"], "a step pod without requests lands anywhere"


def test_rollouts_asks_for_its_pod_on_its_own_step():
    tags = rollouts.op.tags
    assert json.loads(tags["dagster-k8s/config"]) == executors.ROLLOUTS_POD
    assert rollouts.op.pool == "rollouts"


def test_the_code_server_pod_is_valid_and_sees_the_shared_data_root(helm):
    deployment = chart.user_deployment(helm)
    assert deployment["dagsterApiGrpcArgs"] == ["-m", "gym_assets.definitions"]
    container = {
        "name": "dagster-user-deployments",
        "image": chart.image_reference(deployment),
        "imagePullPolicy": deployment["image"]["pullPolicy"],
        "args": ["dagster", "api", "grpc", "-h", "0.0.0.0", "-p", str(deployment["port"])]
        + deployment["dagsterApiGrpcArgs"],
        "ports": [{"name": "grpc", "containerPort": deployment["port"]}],
        "env": deployment["env"],
        "volumeMounts": deployment["volumeMounts"],
        "resources": deployment["resources"],
        "securityContext": deployment["securityContext"],
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": deployment["name"]},
        "spec": {
            "containers": [container],
            "volumes": deployment["volumes"],
            "securityContext": deployment["podSecurityContext"],
        },
    }
    _valid(pod)
    env = _env(container)
    assert env["GYM_ASSETS_EXECUTOR"] == "k8s"
    _assert_data_root_on_the_volume(env, pod["spec"], container)
    assert env == _launcher_env(helm), "the code server and its runs load different locations"


def _assert_data_root_on_the_volume(
    env: dict[str, str], pod_spec: dict[str, Any], container: dict[str, Any]
) -> None:
    claims = {
        v["name"]: v["persistentVolumeClaim"]["claimName"]
        for v in pod_spec["volumes"]
        if "persistentVolumeClaim" in v
    }
    data_root = env["GYM_ASSETS_DATA_ROOT"]
    mounted = [
        claims.get(m["name"])
        for m in container["volumeMounts"]
        if data_root == m["mountPath"] or data_root.startswith(m["mountPath"].rstrip("/") + "/")
    ]
    pvc = chart.manifests()["data-pvc.yaml"]
    assert mounted == [pvc["metadata"]["name"]], (
        f"{data_root} is not on the shared claim {pvc['metadata']['name']} (mounted: {mounted})"
    )


def _pod(job: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = job["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    return spec, container


def test_a_run_pod_is_valid_and_sees_the_shared_data_root(helm, monkeypatch):
    launcher = chart.run_launcher_config(helm)
    image = chart.image_reference(chart.user_deployment(helm))
    job = pods.job_manifest(
        pods.container_context(launcher, "run_k8s_config"), launcher, image, "run_worker"
    )
    _valid(job)
    spec, container = _pod(job)
    env = _env(container)
    _assert_data_root_on_the_volume(env, spec, container)
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["serviceAccountName"] == chart.SERVICE_ACCOUNT
    assert container["resources"] == launcher["resources"]


def test_a_rollouts_step_pod_is_valid_and_sized_by_its_tag(helm, k8s_executor_config, monkeypatch):
    launcher = chart.run_launcher_config(helm)
    for name, value in _launcher_env(helm).items():  # the run pod's environment
        monkeypatch.setenv(name, value)
    context = (
        pods.container_context(launcher, "run_k8s_config")
        .merge(pods.container_context(k8s_executor_config, "step_k8s_config"))
        .merge(pods.tag_context(dict(rollouts.op.tags)))
    )
    image = chart.image_reference(chart.user_deployment(helm))
    job = pods.job_manifest(context, launcher, image, "step_worker")
    _valid(job)
    spec, container = _pod(job)
    assert [v["name"] for v in spec["volumes"]] == [executors.DATA_VOLUME], (
        "the run launcher and the executor name the data volume differently"
    )
    env = _env(container)
    assert {k: env[k] for k in _launcher_env(helm)} == _launcher_env(helm)
    _assert_data_root_on_the_volume(env, spec, container)
    assert container["resources"] == executors.ROLLOUTS_POD["container_config"]["resources"]
    assert spec["securityContext"]["runAsUser"] == 10001


def test_every_variable_the_values_set_is_one_the_code_reads(helm, monkeypatch):
    named = _launcher_env(helm) | {
        item["name"]: item["value"] for item in chart.user_deployment(helm)["env"]
    }
    for name, value in named.items():
        monkeypatch.setenv(name, value)
    readers = {
        "GYM_ASSETS_CONFIGS": lambda: str(Workspace.resolve().configs),
        "GYM_ASSETS_DATA_ROOT": lambda: str(Workspace.resolve().data),
        executors.EXECUTOR_VARIABLE: lambda: executors.rollouts_executor().name,
    }
    unread = sorted(set(named) - set(readers))
    assert not unread, f"set in values.yaml but read by no code: {unread}"
    assert {name: readers[name]() for name in named} == named
    assert named["GYM_ASSETS_DATA_ROOT"] == executors.DATA_ROOT


def _snake(value: Any) -> Any:
    keys = {
        "defaultLimit": "default_limit",
        "maxConcurrentRuns": "max_concurrent_runs",
        "tagConcurrencyLimits": "tag_concurrency_limits",
    }
    if isinstance(value, dict):
        return {keys.get(k, k): _snake(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snake(item) for item in value]
    return value


def test_the_run_queue_and_pools_are_the_instances(helm):
    instance = yaml.safe_load(
        (chart.ROOT / INSTANCE_DIR / "dagster.postgres.yaml").read_text("utf-8")
    )
    concurrency = helm["concurrency"]
    assert concurrency.pop("enabled") is True, "the chart renders no concurrency block otherwise"
    assert _snake(concurrency) == instance["concurrency"]
    daemon = helm["dagsterDaemon"]
    queued = daemon["runCoordinator"]["config"]["queuedRunCoordinator"]
    assert daemon["runCoordinator"]["type"] == "QueuedRunCoordinator"
    assert queued == {
        "dequeueIntervalSeconds": instance["run_queue"]["dequeue_interval_seconds"]
    }, "run limits belong in concurrency.runs (the chart refuses them in both places)"
    assert daemon["runMonitoring"]["enabled"] == instance["run_monitoring"]["enabled"]
    assert helm["telemetry"]["enabled"] == instance["telemetry"]["enabled"]


def test_the_postgres_password_comes_only_from_the_secret(helm):
    assert helm["generatePostgresqlPasswordSecret"] is False
    assert "postgresqlPassword" not in helm["postgresql"]
    secret = chart.manifests()["postgres-secret.example.yaml"]
    assert helm["global"]["postgresqlSecretName"] == secret["metadata"]["name"]
    assert chart.CHART_ENVIRONMENT["DAGSTER_K8S_PG_PASSWORD_SECRET"] == secret["metadata"]["name"]
    assert set(secret["stringData"]) == {"postgresql-password"}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("k8sRunLauncher:\n      imagePullPolicy", "k8sRunLauncher:\n      imagePulPolicy"),
        ("loadInclusterConfig: true", "loadInclusterConfig: maybe"),
        ("        - GYM_ASSETS_EXECUTOR=k8s", "        - GYM_ASSETS_EXECUTOR"),
    ],
)
def test_a_broken_run_launcher_block_is_refused(old, new, monkeypatch):
    """The run launcher check fails on a misspelt key, a wrong value and a malformed variable."""
    text = chart.VALUES.read_text("utf-8")
    assert text.count(old) == 1
    with pytest.raises((AssertionError, dg.DagsterInvalidConfigError, ValueError)):
        broken = chart.values(text.replace(old, new))
        test_the_run_launcher_block_is_a_valid_k8s_run_launcher_config(broken, monkeypatch)
        test_every_variable_the_values_set_is_one_the_code_reads(broken, monkeypatch)
