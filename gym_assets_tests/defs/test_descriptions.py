"""What the UI shows: every definition described in markdown that renders as written, paths
absolute, and nothing printed by loading the code location."""

import re
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from gym_assets.definitions import defs
from gym_assets.defs.partitions import benchmark_partitions
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.tasksets import assets as taskset_assets
from gym_assets_tests.defs.benchmark_runs import materialize_benchmark

CODE_SPAN = re.compile(r"`[^`]*`")
HTML_TAG = re.compile(r"</?[A-Za-z][^>]*>")


def _descriptions() -> dict[str, str | None]:
    repo = defs.get_repository_def()
    graph = repo.asset_graph
    found: dict[str, str | None] = {}
    for key in graph.get_all_asset_keys():
        found[f"asset {key.to_user_string()}"] = graph.get(key).description
    for key in graph.asset_check_keys:
        found[f"check {key.name}"] = graph.get_check_spec(key).description
    for job in repo.get_all_jobs():
        if not job.name.startswith("__"):  # Dagster's own implicit asset job
            found[f"job {job.name}"] = job.description
    for sensor in repo.sensor_defs:
        found[f"sensor {sensor.name}"] = sensor.description
    for schedule in repo.schedule_defs:
        found[f"schedule {schedule.name}"] = schedule.description
    for name, resource in repo.get_top_level_resources().items():
        found[f"resource {name}"] = resource.description
    return found


def _rendering_problems(text: str) -> list[str]:
    """What would not render as written in the UI's markdown."""
    problems = []
    if "``" in text:
        problems.append("reStructuredText double backticks show literally")
    if HTML_TAG.search(CODE_SPAN.sub("", text)):
        problems.append("a <placeholder> outside a code span is swallowed as HTML")
    lines = text.splitlines()
    for before, line in zip(["", *lines], lines, strict=False):
        if not before.strip() and line.startswith("    "):
            problems.append(f"an indented line after a blank one renders as code: {line!r}")
    return problems


def test_every_definition_has_a_description_that_renders():
    found = _descriptions()
    assert {"sensor plan_automation_sensor", "resource workspace", "job rollouts_job"} <= set(found)
    missing = sorted(name for name, text in found.items() if not (text or "").strip())
    assert not missing
    broken = {name: _rendering_problems(text or "") for name, text in found.items()}
    assert not {name: problems for name, problems in broken.items() if problems}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("under data_root/rollouts/<benchmark>/<harness>/.", "swallowed as HTML"),
        ("At most ``threshold`` of the rollouts", "double backticks"),
        ("First paragraph.\n\n    Second, indented.", "renders as code"),
    ],
)
def test_the_rendering_rules_catch_what_the_ui_got_wrong(text, problem):
    assert any(problem in found for found in _rendering_problems(text))


def test_loading_the_code_location_prints_no_warning():
    """Each run process and code server loads it: a warning here is printed per process."""
    loaded = subprocess.run(
        [sys.executable, "-W", "default", "-c", "import gym_assets.definitions"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Warning" not in loaded.stderr, loaded.stderr


def test_a_rollouts_partition_reads_its_benchmarks_plan():
    graph = defs.get_repository_def().asset_graph
    mapping = graph.get_partition_mapping(dg.AssetKey("rollouts"), dg.AssetKey("eval_plan"))
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("benchmark", ["arith", "units"])
        instance.add_dynamic_partitions("harness", ["simple_agent"])
        upstream = mapping.get_upstream_mapped_partitions_result_for_partitions(
            graph.get(dg.AssetKey("rollouts")).partitions_def.subset_with_partition_keys(
                ["units|simple_agent"]
            ),
            graph.get(dg.AssetKey("rollouts")).partitions_def,
            benchmark_partitions,
            dynamic_partitions_store=instance,
        )
    assert list(upstream.partitions_subset.get_partition_keys()) == ["units"]


def test_paths_in_metadata_are_absolute(monkeypatch, tmp_path, configs, instance):
    """A workspace given relative roots (the defaults are `./configs` and `./.gym_assets`)."""
    monkeypatch.chdir(tmp_path)
    workspace = GymWorkspace(configs_root="configs", data_root="data")
    assert configs == tmp_path / "configs"
    result = materialize_benchmark(workspace, instance, "units")
    paths = [
        value.value
        for event in result.get_asset_materialization_events()
        for value in event.step_materialization_data.materialization.metadata.values()
        if isinstance(value, dg.PathMetadataValue)
    ]
    assert len(paths) == 3
    assert all(Path(path).is_absolute() and Path(path).exists() for path in paths), paths
    collated = instance.get_latest_materialization_event(
        taskset_assets.collated_taskset.key
    ).asset_materialization.metadata
    digests = collated["output_digests"].value
    assert all(len(digest) == 64 for digest in digests.values())
    table = collated["outputs"].value
    assert all(digest[:12] + "…" in table and digest not in table for digest in digests.values())
