"""config_change_sensor: requests a benchmark only when its configs differ from what its latest
collation was built from; new benchmarks become partitions, removed ones are reported."""

import shutil
from pathlib import Path

import dagster as dg
import psutil
import pytest

from gym_assets.definitions import defs
from gym_assets.defs import demo
from gym_assets.defs.partitions import PARTITION_TAG, benchmark_partitions, harness_partitions
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.tasksets.sensors import config_change_sensor
from gym_assets.local_dagster import INSTANCE_DIR
from gym_assets.tasks.collate import CONFLICT_FIX
from gym_assets_tests.defs.conftest import REPO
from gym_assets_tests.tasks.test_pipeline import snapshot

BUNDLED = ["arith", "humaneval", "support_dialogue", "units"]
UNITS_EDIT = ("Reply with the number only.", "Answer with the number only.")


def _tick(instance, workspace) -> dg.SensorResult | dg.SkipReason:
    context = dg.build_sensor_context(instance=instance, resources={"workspace": workspace})
    return config_change_sensor(context)


def _requested(result) -> list[str]:
    if isinstance(result, dg.SkipReason):
        return []
    return [r.partition_key for r in result.run_requests]


def _units_request(result) -> dg.RunRequest:
    (request,) = [r for r in result.run_requests if r.partition_key == "units"]
    return request


def _collate(instance, workspace, name: str) -> None:
    """What a run of the requested job does to the instance: a new collation of ``name``."""
    job = defs.resolve_job_def("benchmark_job")
    result = job.execute_in_process(
        instance=instance,
        partition_key=name,
        resources={"workspace": workspace},
        run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
    )
    assert result.success


def _edit_units(configs) -> None:
    data = configs / "benchmarks" / "units" / "units.jsonl"
    data.write_text(data.read_text().replace(*UNITS_EDIT))


def _add_arith_copy(configs) -> Path:
    """A new benchmark: arith's configs and data under new names (its own servers and agent)."""
    source, target = configs / "benchmarks" / "arith", configs / "benchmarks" / "arith_copy"
    target.mkdir()
    (target / "arith_copy.jsonl").write_bytes((source / "arith.jsonl").read_bytes())
    metrics = (source / "arith_metrics.json").read_text()
    (target / "arith_copy_metrics.json").write_text(metrics.replace("arith", "arith_copy"))
    config = (source / "config.yaml").read_text()
    (target / "config.yaml").write_text(config.replace("arith", "arith_copy"))
    return target


def test_first_tick_on_a_fresh_instance_adds_and_requests_every_benchmark(instance, workspace):
    result = _tick(instance, workspace)
    assert sorted(_requested(result)) == BUNDLED
    (add,) = result.dynamic_partitions_requests
    assert sorted(add.partition_keys) == BUNDLED
    assert all(r.tags["gym_assets/benchmark"] == r.partition_key for r in result.run_requests)
    assert set(instance.get_dynamic_partitions(harness_partitions.name)) >= {"simple_agent"}


def test_a_known_partition_never_collated_is_requested(instance, workspace):
    instance.add_dynamic_partitions(benchmark_partitions.name, BUNDLED)
    result = _tick(instance, workspace)
    assert sorted(_requested(result)) == BUNDLED
    assert not result.dynamic_partitions_requests


@pytest.mark.parametrize("status", ["NOT_STARTED", "STARTED", "SUCCESS", "FAILURE"])
def test_a_partition_with_a_run_in_flight_waits_for_it(instance, workspace, status):
    instance.add_dynamic_partitions(benchmark_partitions.name, BUNDLED)
    run = dg.DagsterRun(
        job_name="benchmark_job",
        run_id="0" * 36,
        status=dg.DagsterRunStatus(status),
        tags={PARTITION_TAG: "units"},
    )
    instance.add_run(run)  # as a run launched from the UI or `make demo` before the tick
    result = _tick(instance, workspace)
    waiting = status in ("NOT_STARTED", "STARTED")
    assert ("units" in _requested(result)) is not waiting
    assert len(_requested(result)) == len(BUNDLED) - waiting


@pytest.mark.slow
def test_reverting_an_edit_is_a_change_of_its_own(instance, workspace, configs):
    instance.add_dynamic_partitions(benchmark_partitions.name, ["units"])
    _collate(instance, workspace, "units")
    original = _tick(instance, workspace)
    _edit_units(configs)
    edited = _units_request(_tick(instance, workspace))
    _collate(instance, workspace, "units")
    data = configs / "benchmarks" / "units" / "units.jsonl"
    data.write_text(data.read_text().replace(UNITS_EDIT[1], UNITS_EDIT[0]))
    reverted = _units_request(_tick(instance, workspace))
    # the run key names where the partition was built from and where it goes: each edit is
    # requested once, and going back to the first configs is not mistaken for the first run
    assert edited.run_key != reverted.run_key
    assert reverted.tags["gym_assets/fingerprint"] == edited.run_key.split(":")[1].split("->")[0]
    assert "units" not in _requested(original)


@pytest.mark.slow
def test_after_the_demo_only_changes_are_requested(monkeypatch, tmp_path, configs):
    """The issue's story: `make demo`, then the daemon's first tick, then three edits."""
    home, data = tmp_path / "dagster_home", tmp_path / "data"
    home.mkdir()
    shutil.copy(REPO / INSTANCE_DIR / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("GYM_ASSETS_CONFIGS", str(configs))
    monkeypatch.setenv("GYM_ASSETS_DATA_ROOT", str(data))
    assert demo.main(defs) == 0
    assert not psutil.Process().children(recursive=True)  # the demo stopped what it started
    workspace = GymWorkspace()
    with dg.DagsterInstance.get() as instance:
        # launched from the code location, as the UI would: each job's run history lists them
        # (the UI's job page filters on this label) and no sensor queued a second run
        labelled = dg.RunsFilter(tags={".dagster/repository": "__repository__@gym_assets"})
        runs = instance.get_runs(labelled)
        assert sorted(run.job_name for run in runs) == ["benchmark_job"] * 4 + ["rollouts_job"]
        assert len(instance.get_runs()) == 5
        first = _tick(instance, workspace)
        assert isinstance(first, dg.SkipReason), first
        assert "4 of 4 benchmarks are collated" in (first.skip_message or "")

        _edit_units(configs)
        edited = _tick(instance, workspace)
        assert _requested(edited) == ["units"]
        assert not edited.dynamic_partitions_requests
        _collate(instance, workspace, "units")
        assert isinstance(_tick(instance, workspace), dg.SkipReason)

        added_dir = _add_arith_copy(configs)
        added = _tick(instance, workspace)
        assert _requested(added) == ["arith_copy"]
        (add,) = added.dynamic_partitions_requests
        assert add.partition_keys == ["arith_copy"]
        instance.add_dynamic_partitions(benchmark_partitions.name, ["arith_copy"])
        _collate(instance, workspace, "arith_copy")
        assert isinstance(_tick(instance, workspace), dg.SkipReason)

        shutil.rmtree(added_dir)
        removed = _tick(instance, workspace)
        assert isinstance(removed, dg.SkipReason)
        assert "no longer in the configs: arith_copy" in (removed.skip_message or "")
        assert "arith_copy" in instance.get_dynamic_partitions(benchmark_partitions.name)


# The tags the sensor daemon puts on a run it launches for a request; it launches a request
# only when no run of the sensor carries its run key yet (Dagster's run-key deduplication).
RUN_KEY_TAG, SENSOR_NAME_TAG = "dagster/run_key", "dagster/sensor_name"


def _launch(instance, workspace, request: dg.RunRequest) -> dg.ExecuteInProcessResult | None:
    """What the daemon does with a request: nothing if its run key already ran, else a run."""
    sensor_runs = dg.RunsFilter(
        tags={SENSOR_NAME_TAG: config_change_sensor.name, RUN_KEY_TAG: request.run_key or ""}
    )
    if instance.get_runs(sensor_runs):
        return None
    job = defs.resolve_job_def("benchmark_job")
    return job.execute_in_process(
        instance=instance,
        partition_key=request.partition_key,
        resources={"workspace": workspace},
        tags={
            **request.tags,
            SENSOR_NAME_TAG: config_change_sensor.name,
            RUN_KEY_TAG: request.run_key or "",
        },
        run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}},
        raise_on_error=False,
    )


def _failure_message(result: dg.ExecuteInProcessResult) -> str:
    (failure,) = result.get_step_failure_events()
    error = failure.step_failure_data.error
    assert error is not None
    return error.message


@pytest.mark.slow
def test_a_metrics_conflict_is_retried_once_the_user_applies_the_fix(instance, workspace, configs):
    """The issue's dead end: a normal config edit, the sensor's run fails on the metrics
    conflict, the user does what the message says, and the sensor collates again."""
    units = configs / "benchmarks" / "units"
    instance.add_dynamic_partitions(benchmark_partitions.name, ["units"])
    first = _launch(instance, workspace, _units_request(_tick(instance, workspace)))
    assert first is not None and first.success
    config = units / "config.yaml"
    config.write_text(config.read_text().replace("num_repeats: 1", "num_repeats: 2"))
    edited = snapshot(configs)

    request = _units_request(_tick(instance, workspace))
    failed = _launch(instance, workspace, request)
    assert failed is not None and not failed.success
    message = _failure_message(failed)
    sidecar = units / "units_metrics.json"
    conflicts = Path(workspace.data_root) / "metrics_conflicts" / "tasksets" / "units"
    conflict = conflicts / "units_metrics_conflict.json"
    assert f"{sidecar} differs from the new metrics in {conflict}" in message
    assert CONFLICT_FIX in message
    assert snapshot(configs) == edited  # nothing written into the configs tree
    # nothing changed since: the sensor asks for the same run, which the daemon does not repeat
    assert _launch(instance, workspace, _units_request(_tick(instance, workspace))) is None

    sidecar.write_bytes(conflict.read_bytes())  # the fix the message asks for
    retried = _launch(instance, workspace, _units_request(_tick(instance, workspace)))
    assert retried is not None and retried.success
    assert not conflicts.exists()
    assert "units" not in _requested(_tick(instance, workspace))


def test_the_troubleshooting_entry_gives_the_messages_instructions():
    text = (REPO / "docs" / "operations.md").read_text().replace("`", "")
    assert CONFLICT_FIX in " ".join(text.split())
