"""The workspace resource reads the configs once per run, and afresh outside a run."""

from gym_assets.defs import resources
from gym_assets_tests.defs.benchmark_runs import materialize_benchmark


def test_a_run_reads_the_configs_once_for_all_its_steps(workspace, instance, monkeypatch):
    loads = []

    def counted(*args):
        loads.append(args)
        return load_catalog(*args)

    load_catalog = resources.load_catalog
    monkeypatch.setattr(resources, "load_catalog", counted)
    result = materialize_benchmark(workspace, instance, "units")
    assert result.success and len(result.get_asset_check_evaluations()) == 8
    assert len(loads) == 1


def test_outside_a_run_each_call_reads_the_configs_as_they_are(workspace, configs):
    assert "units" in workspace.catalog().names()
    config = configs / "benchmarks" / "units" / "config.yaml"
    config.write_text(config.read_text().replace("name: units\n", "name: units_renamed\n"))
    names = workspace.catalog().names()
    assert "units_renamed" in names and "units" not in names
