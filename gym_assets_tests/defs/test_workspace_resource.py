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


def test_a_config_with_a_generated_relay_is_logged_as_a_warning(tmp_path, caplog):
    """Python hides the loader's DeprecationWarning; the resource logs it for the run."""
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "agent.yaml").write_text(
        "lonely_simple_agent:\n  responses_api_agents:\n    simple_agent: {entrypoint: app.py}\n"
    )
    workspace = resources.GymWorkspace(configs_root=str(configs), data_root=str(tmp_path / "d"))
    with caplog.at_level("WARNING"):
        workspace.catalog()
    assert [r.getMessage() for r in caplog.records if "DEPRECATED" in r.getMessage()] == [
        "DEPRECATED: agents without an environment server: `lonely_simple_agent`. Each was given "
        "a generated `legacy_agent` relay for this run; a future release will refuse such "
        "configs with AgentWithoutEnvironmentServerError."
    ]
