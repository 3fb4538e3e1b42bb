"""The workspace: the two roots from flags or the environment, and the paths of products."""

from pathlib import Path

import pytest

from gym_assets.cli import build_parser
from gym_assets.cli.flags import workspace_of
from gym_assets.defs.resources import GymWorkspace
from gym_assets.outputs.markers import ROLLOUTS_RUN
from gym_assets.outputs.targets import Target
from gym_assets.workspace import Workspace


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GYM_ASSETS_CONFIGS", raising=False)
    monkeypatch.delenv("GYM_ASSETS_DATA_ROOT", raising=False)
    return tmp_path


def test_without_values_or_environment_the_roots_are_configs_and_gym_assets_here(cwd):
    assert Workspace.resolve() == Workspace(cwd / "configs", cwd / ".gym_assets")


def test_the_environment_sets_the_defaults_and_a_given_value_wins(cwd, monkeypatch):
    monkeypatch.setenv("GYM_ASSETS_CONFIGS", "/srv/configs")
    monkeypatch.setenv("GYM_ASSETS_DATA_ROOT", "/srv/data")
    assert Workspace.resolve() == Workspace(Path("/srv/configs"), Path("/srv/data"))
    assert Workspace.resolve("", None).configs == Path("/srv/configs")  # empty: not given
    given = Workspace.resolve("mine", "out")
    assert (given.configs, given.data) == (cwd / "mine", cwd / "out")


def test_roots_are_absolute_however_the_workspace_is_built(cwd):
    built = Workspace(Path("configs"), Path("data"))
    assert built.configs.is_absolute() and built.data.is_absolute()
    assert built == Workspace(cwd / "configs", cwd / "data")


def test_the_rollouts_run_of_a_partition_lives_under_the_data_root(cwd):
    workspace = Workspace.resolve(data="data")
    run = workspace.rollouts_run_dir("units", "simple_agent")
    assert run == cwd / "data" / "rollouts" / "units" / "simple_agent"
    target = Target.of(run, ROLLOUTS_RUN, workspace)  # a product of the data root, no --out
    assert (target.data_root, target.flag) == (workspace.data, None)


def test_every_product_lies_under_the_data_root(cwd):
    workspace = Workspace.resolve()
    paths = [
        workspace.flavor_root("units/short"),
        workspace.prepared_dir("units"),
        workspace.taskset_dir("units"),
        workspace.collation_dir("train_preparation"),
        workspace.metrics_dir_of("instance", "dataset"),
        workspace.plan_path("units"),
        workspace.previous_plan_path("units"),
        workspace.metrics_dir("units"),
        workspace.rollouts_run_dir("units", "simple_agent"),
        workspace.alerts_dir(),
        workspace.conformance_runs_dir("simple_agent"),
        workspace.conformance_matrix_dir(),
        workspace.services_dir("postgres"),
    ]
    assert all(workspace.data in path.parents for path in paths)
    assert len(set(paths)) == len(paths)


def test_the_command_line_and_the_dagster_resource_build_the_same_workspace(cwd, monkeypatch):
    monkeypatch.setenv("GYM_ASSETS_DATA_ROOT", "/srv/data")
    args = build_parser().parse_args(["plan", "--configs", "mine", "--benchmark", "units"])
    resource = GymWorkspace(configs_root="mine")
    assert workspace_of(args) == resource.paths == Workspace(cwd / "mine", Path("/srv/data"))
    # a command without --data-root (or --configs) takes the default, as every command does
    listing = build_parser().parse_args(["list", "harnesses"])
    assert workspace_of(listing) == Workspace(cwd / "configs", Path("/srv/data"))
