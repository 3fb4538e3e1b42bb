"""The workspace resource reads the configs once per run, and afresh outside a run."""

import dagster as dg

from gym_assets.defs import resources
from gym_assets.defs.partitions import benchmark_partitions
from gym_assets.defs.plans import assets as plan_assets
from gym_assets.defs.plans import checks as plan_checks
from gym_assets.defs.tasksets import assets as taskset_assets
from gym_assets.defs.tasksets import checks as taskset_checks


def test_a_run_reads_the_configs_once_for_all_its_steps(workspace, instance, monkeypatch):
    loads = []

    def counted(*args):
        loads.append(args)
        return load_catalog(*args)

    load_catalog = resources.load_catalog
    monkeypatch.setattr(resources, "load_catalog", counted)
    instance.add_dynamic_partitions(benchmark_partitions.name, ["units"])
    result = dg.materialize(
        [
            taskset_assets.prepared_benchmark,
            taskset_assets.collated_taskset,
            plan_assets.eval_plan,
            *dg.load_asset_checks_from_modules([taskset_checks, plan_checks]),
        ],
        resources={"workspace": workspace},
        instance=instance,
        partition_key="units",
    )
    assert result.success and len(result.get_asset_check_evaluations()) == 8
    assert len(loads) == 1


def test_outside_a_run_each_call_reads_the_configs_as_they_are(workspace, configs):
    assert "units" in workspace.catalog().names()
    config = configs / "benchmarks" / "units" / "config.yaml"
    config.write_text(config.read_text().replace("name: units\n", "name: units_renamed\n"))
    names = workspace.catalog().names()
    assert "units_renamed" in names and "units" not in names
