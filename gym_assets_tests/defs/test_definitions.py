"""The Definitions object loads and exposes what the UI and the daemon need."""

from typing import get_args

import dagster as dg

from gym_assets.definitions import defs
from gym_assets.defs.metadata import OWNER, Domain


def test_definitions_load():
    dg.Definitions.validate_loadable(defs)


def test_assets_checks_and_partitions():
    keys = {key.to_user_string() for key in defs.resolve_all_asset_keys()}
    assert {"prepared_benchmark", "collated_taskset", "eval_plan"} <= keys
    collated = defs.resolve_assets_def("collated_taskset")
    assert collated.partitions_def.name == "benchmark"
    check_names = {key.name for key in defs.get_repository_def().asset_graph.asset_check_keys}
    assert {
        "task_data_valid",
        "task_ids_unique",
        "route_resolves",
        "stable_task_ids",
    } <= check_names


def test_job_and_sensor_resolve():
    job = defs.resolve_job_def("benchmark_job")
    assert job.partitions_def is not None
    for name in (
        "config_change_sensor",
        "plan_automation_sensor",
        "conformance_automation_sensor",
        "check_alerts_on_success",
        "run_failure_alerts",
    ):
        assert defs.resolve_sensor_def(name).default_status == dg.DefaultSensorStatus.RUNNING


def test_conformance_job_and_sweep_resolve():
    assert defs.resolve_job_def("conformance_job").partitions_def.name == "harness"
    sweep = defs.resolve_schedule_def("conformance_sweep")
    assert sweep.default_status == dg.DefaultScheduleStatus.RUNNING
    assert sweep.job_name == "conformance_job"


def test_every_asset_has_an_owner_and_a_domain():
    specs = {spec.key.to_user_string(): spec for spec in defs.resolve_all_asset_specs()}
    unlabelled = {
        name: (spec.owners, dict(spec.tags))
        for name, spec in specs.items()
        if list(spec.owners) != [OWNER] or spec.tags.get("domain") not in get_args(Domain)
    }
    assert specs and unlabelled == {}
