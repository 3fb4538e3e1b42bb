"""config_change_sensor: new benchmarks become partitions; changed ones are re-collated once."""

import json

import dagster as dg

from gym_assets.defs.partitions import benchmark_partitions
from gym_assets.defs.tasksets.sensors import config_change_sensor


def _tick(instance, workspace, cursor=None):
    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, resources={"workspace": workspace}
    )
    return config_change_sensor(context)


def test_first_tick_adds_partitions_and_requests_every_benchmark(instance, workspace):
    result = _tick(instance, workspace)
    names = sorted(r.partition_key for r in result.run_requests)
    assert names == ["arith", "humaneval", "support_dialogue", "units"]
    (add,) = result.dynamic_partitions_requests
    assert sorted(add.partition_keys) == names
    assert all(
        r.run_key == f"{r.partition_key}:{r.tags['gym_assets/fingerprint']}"
        for r in result.run_requests
    )


def test_unchanged_configs_skip(instance, workspace):
    first = _tick(instance, workspace)
    instance.add_dynamic_partitions(
        benchmark_partitions.name, [r.partition_key for r in first.run_requests]
    )
    second = _tick(instance, workspace, cursor=first.cursor)
    assert isinstance(second, dg.SkipReason)


def test_edit_requests_only_the_changed_benchmark(instance, workspace, configs):
    first = _tick(instance, workspace)
    instance.add_dynamic_partitions(
        benchmark_partitions.name, [r.partition_key for r in first.run_requests]
    )
    data = configs / "benchmarks" / "units" / "units.jsonl"
    data.write_text(
        data.read_text().replace("Reply with the number only.", "Answer with a number.")
    )
    result = _tick(instance, workspace, cursor=first.cursor)
    (request,) = result.run_requests
    assert request.partition_key == "units"
    old = json.loads(first.cursor)["units"]
    assert request.run_key == f"units:{json.loads(result.cursor)['units']}" != f"units:{old}"
    assert not result.dynamic_partitions_requests


def test_new_benchmark_adds_a_partition(instance, workspace, configs):
    first = _tick(instance, workspace)
    instance.add_dynamic_partitions(
        benchmark_partitions.name, [r.partition_key for r in first.run_requests]
    )
    extra = configs / "benchmarks" / "units" / "more.yaml"
    block = (configs / "benchmarks" / "units" / "config.yaml").read_text()
    extra.write_text(
        block.replace("units_resources:", "units_extra_resources:")
        .replace("name: units\n", "name: units_extra\n")
        .replace("taskset: units", "taskset: units_extra")
        .split("units_simple_agent:")[0]
    )
    routes = configs / "routes.yaml"
    routes.write_text(
        routes.read_text().replace(
            "  units: units_environment",
            "  units: units_environment\n  units_extra: units_environment",
        )
    )
    result = _tick(instance, workspace, cursor=first.cursor)
    assert [r.partition_key for r in result.run_requests] == ["units_extra"]
    (add,) = result.dynamic_partitions_requests
    assert add.partition_keys == ["units_extra"]
