"""``scoreboard`` on a real instance: two rollouts partitions, then a run with another model."""

from pathlib import Path

import dagster as dg

from gym_assets.defs.automation import scoreboard_automation_sensor
from gym_assets.defs.partitions import harness_partitions
from gym_assets.defs.rollouts import assets as rollout_assets
from gym_assets.defs.rollouts.resources import HarnessRunner, ModelEndpoint
from gym_assets.defs.scoreboard.assets import scoreboard
from gym_assets.rollouts.analysis.scoreboard import COLUMNS
from gym_assets_tests.defs.benchmark_runs import materialize_benchmark
from gym_assets_tests.defs.links import linked_file

HARNESS = "simple_agent"


def _resources(workspace, endpoint=None):
    return {
        "workspace": workspace,
        "model_endpoint": endpoint or ModelEndpoint(),
        "harness_runner": HarnessRunner(concurrency=8),
    }


def _rollouts(workspace, instance, benchmark, endpoint=None):
    result = dg.materialize(
        [rollout_assets.rollouts],
        resources=_resources(workspace, endpoint),
        instance=instance,
        partition_key=dg.MultiPartitionKey({"benchmark": benchmark, "harness": HARNESS}),
    )
    assert result.success
    return result.get_asset_materialization_events()[0].materialization.metadata


def _scoreboard(workspace, instance):
    result = dg.materialize([scoreboard], resources={"workspace": workspace}, instance=instance)
    assert result.success
    return result.get_asset_materialization_events()[0].materialization.metadata


def _cells(metadata):
    table = metadata["scoreboard"].value
    assert [column.name for column in table.schema.columns] == [name for name, _, _ in COLUMNS]
    return {(r.data["benchmark"], r.data["model"]): r.data for r in table.records}


def test_the_scoreboard_shows_every_benchmark_harness_and_model(workspace, instance):
    for benchmark in ("units", "arith"):
        assert materialize_benchmark(workspace, instance, benchmark).success
    instance.add_dynamic_partitions(harness_partitions.name, [HARNESS])
    units = _rollouts(workspace, instance, "units")
    assert units["model"].value == {"name": "policy", "upstream": "reference", "base_url": None}
    assert Path(units["result"].value).name == "rollouts_result.json"
    _rollouts(workspace, instance, "arith")

    cells = _cells(_scoreboard(workspace, instance))
    assert set(cells) == {("units", "policy (reference)"), ("arith", "policy (reference)")}
    row = cells[("units", "policy (reference)")]
    assert row["harness"] == HARNESS and row["reward_mean"] == 1.0 and row["pass_at_1"] == 1.0
    assert row["planned"] == units["rollouts"].value == row["measured"]
    assert row["masked_share"] == 0.0 and row["failed_share"] == 0.0
    assert row["change"] == "first run" and row["runs"] == 1
    assert row["plan_digest"].startswith("sha256:")

    # Another model runs the units partition: its run directory now holds only that run, and
    # half its answers are wrong. The first model's cell stays; the new one is added.
    other = ModelEndpoint(model="other-model", corrupt_fraction=0.5, seed=3)
    rerun = _rollouts(workspace, instance, "units", other)
    assert rerun["model"].value["name"] == "other-model"
    metadata = _scoreboard(workspace, instance)
    cells = _cells(metadata)
    assert set(cells) == {
        ("units", "policy (reference)"),
        ("arith", "policy (reference)"),
        ("units", "other-model (reference)"),
    }
    assert cells[("units", "policy (reference)")] == row
    new = cells[("units", "other-model (reference)")]
    assert new["reward_mean"] == rerun["reward_mean"].value < 1.0
    assert metadata["cells"].value == 3
    page = linked_file(metadata["scoreboard_html"]).read_text()
    assert page.count("<svg") == 3 and "other-model (reference)" in page
    assert "units | simple_agent | other-model (reference)" in metadata["markdown"].value

    # The same model again, worse: the cell shows the regression against its previous run.
    _rollouts(workspace, instance, "arith", ModelEndpoint(corrupt_fraction=1.0))
    metadata = _scoreboard(workspace, instance)
    arith = _cells(metadata)[("arith", "policy (reference)")]
    assert arith["runs"] == 2 and arith["previous_reward_mean"] == 1.0
    assert arith["reward_delta"] == arith["reward_mean"] - 1.0 < 0
    assert arith["change"] == "regressed" and metadata["regressed"].value == 1


def test_it_follows_a_rollouts_run_while_other_partitions_never_ran(workspace, instance):
    assert materialize_benchmark(workspace, instance, "units").success
    assert materialize_benchmark(workspace, instance, "arith").success  # arith never collects
    instance.add_dynamic_partitions(harness_partitions.name, [HARNESS, "codex"])
    defs = dg.Definitions(
        assets=[rollout_assets.rollouts, scoreboard],
        sensors=[scoreboard_automation_sensor],
        resources=_resources(workspace),
    )
    first = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    assert first.total_requested == 0  # nothing has run yet
    _rollouts(workspace, instance, "units")
    after_run = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
    assert after_run.get_num_requested(scoreboard.key) == 1
    _scoreboard(workspace, instance)
    rendered = dg.evaluate_automation_conditions(
        defs=defs, instance=instance, cursor=after_run.cursor
    )
    assert rendered.get_num_requested(scoreboard.key) == 0
