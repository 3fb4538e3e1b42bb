"""Collation end to end (reference cases 12-22, 26-28, plus bad input and atomicity)."""

from __future__ import annotations

import hashlib
import json
import os
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from gym_assets.errors import ConfigError, UserError
from gym_assets.tasks.collate import collate
from gym_assets.tasks.collation_model import CollationInput
from gym_assets.tasks.row_routing import environment_server_for_row
from gym_assets.tasks.task_inputs import SingleAgentTurnTaskInput
from gym_assets_tests.tasks.conftest import (
    agent,
    inputs_of,
    read_jsonl,
    resources_server,
    single_agent_environment,
    write_jsonl,
)

RCP = {"input": [{"role": "user", "content": "fix the bug"}]}
ROW_A = {
    "problem_id": "p1",
    "instance_id": "i1",
    "responses_create_params": RCP,
    "run_script": "pytest -q",
    "verifier_metadata": {"repo": "r"},
    "agent_ref": {"name": "old_agent"},
    "skills_ref": {"name": "skills"},
    "task_source": "somewhere",
    "_ng_task_index": 7,
    "_ng_rollout_index": 2,
    "_ng_attempt_index": 1,
}
ROW_B = {"responses_create_params": RCP}


def dataset(name: str = "ds", type_: str = "train", **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "jsonl_fpath": "source.jsonl", **extra}


def swe_config(type_: str = "train", **extra: Any) -> dict[str, Any]:
    return {
        "environment_server_routes": {"swe:test": "swe-environment"},
        **resources_server(
            "native", [dataset(type_=type_, taskset="swe:test", num_repeats=2, **extra)]
        ),
        **resources_server("flat", [dataset(type_=type_, num_repeats=2, **extra)]),
        **agent("agent", "native"),
        **single_agent_environment("swe-environment", "agent", "native"),
    }


def taskset_config(
    rows_by_file: dict[str, list], tmp_path: Path, taskset: str = "t", repeats: int = 2
) -> dict[str, Any]:
    datasets = []
    for i, (file, rows) in enumerate(rows_by_file.items()):
        write_jsonl(tmp_path / "data" / file, rows)
        datasets.append(
            {
                "name": f"ds{i}",
                "type": "train",
                "jsonl_fpath": file,
                "taskset": taskset,
                "num_repeats": repeats,
            }
        )
    return {
        "environment_server_routes": {taskset: "env"},
        **resources_server("rs", datasets),
        **agent("agent", "rs"),
        # an environment without a schema: these tests are about IDs, not task data
        **single_agent_environment("env", "agent", "rs", impl="plain_env"),
    }


@pytest.mark.parametrize("type_", ["train", "benchmark"])
def test_taskset_and_flat_declarations_of_one_file(tmp_path: Path, run_collate, type_) -> None:
    source = write_jsonl(tmp_path / "data" / "source.jsonl", [ROW_A, ROW_B])
    before = source.read_bytes()
    extra = {"prepare_script": "prepare.py"} if type_ == "benchmark" else {}
    config = swe_config(type_, **extra)
    with pytest.warns(DeprecationWarning, match="stripped legacy agent_ref from 1 rows"):
        report = run_collate(config)
    out = tmp_path / "out"
    native = read_jsonl(out / "source_prepare.jsonl")
    flat = read_jsonl(out / "source_prepare.flat.jsonl")
    assert len(native) == len(flat) == 4
    assert native[0] == native[1] and native[2] == native[3]
    assert native[0]["task_id"] == {"taskset": "swe:test", "task_id": "p1"}
    assert native[2]["task_id"]["task_id"] == "1"
    assert native[0]["task_input"]["run_script"] == "pytest -q"
    for key in ("agent_ref", "task_source", "skills_ref"):
        assert key not in native[0] and key not in native[0]["task_input"]
    assert {k for k in native[0] if k.startswith("_ng_")} == {
        "_ng_task_index",
        "_ng_rollout_index",
        "_ng_attempt_index",
    }
    assert "task_input" not in flat[0]
    assert flat[0]["task_source"] == "flat" and "agent_ref" not in flat[0]
    assert source.read_bytes() == before
    collated = read_jsonl(out / f"{type_}.jsonl")
    assert collated == native + flat
    routed = {**config, "environment_routing_mode": "taskset"}
    assert environment_server_for_row(routed, collated[0]) == "swe-environment"
    parsed = SingleAgentTurnTaskInput.model_validate(collated[0]["task_input"])
    assert parsed.task_data["run_script"] == "pytest -q"
    # two tasks per declaration: the taskset's two, and the flat declaration's two rows
    assert report.rows == 8 and report.tasks == 4
    assert report.tasksets == ["swe:test"]
    assert report.agent_ref_stripped == {"native/ds": 1, "flat/ds": 1}
    assert report.preview == collated[:3]
    by_path = {Path(o.path).name: o for o in report.outputs}
    assert by_path[f"{type_}.jsonl"].rows == 8
    digest = hashlib.sha256((out / f"{type_}.jsonl").read_bytes()).hexdigest()
    assert by_path[f"{type_}.jsonl"].sha256 == digest
    assert f"{type_}_metrics.json" in by_path


def test_shard_identity_keys_stay_top_level(tmp_path: Path, run_collate) -> None:
    rows = [
        {
            "responses_create_params": RCP,
            "_ng_task_index": 100,
            "_ng_attempt_index": 2,
            "_ng_rollout_index": 0,
            "_ng_rollout_id": "shard-100",
        },
        {
            "responses_create_params": RCP,
            "_ng_task_index": 200,
            "_ng_attempt_index": 2,
            "_ng_rollout_index": 0,
        },
    ]
    config = taskset_config({"source.jsonl": rows}, tmp_path, taskset="tasks", repeats=1)
    run_collate(config, validation="off")
    out = read_jsonl(tmp_path / "out" / "source_prepare.jsonl")
    for original, task in zip(rows, out, strict=True):
        for key, value in original.items():
            if key.startswith("_ng_"):
                assert task[key] == value
                assert key not in task["task_input"]
        assert task["task_id"]["task_id"] == str(original["_ng_task_index"])


def test_prompt_config_is_applied_before_materialization(tmp_path: Path, run_collate) -> None:
    write_jsonl(
        tmp_path / "data" / "source.jsonl", [{"instance_id": "i1", "question": "What is 2+2?"}]
    )
    prompt = tmp_path / "prompt.yaml"
    prompt.write_text('system: "Be brief."\nuser: "Q: {question}"\n')
    config = taskset_config({}, tmp_path, taskset="bench")
    config["rs"]["resources_servers"]["test"]["datasets"] = [
        dataset(type_="benchmark", taskset="bench", prompt_config="prompt.yaml")
    ]
    run_collate(config, prompt_config_path=prompt)
    (task,) = read_jsonl(tmp_path / "out" / "benchmark.jsonl")
    assert task["task_id"] == {"taskset": "bench", "task_id": "i1"}
    assert task["task_input"]["responses_create_params"]["input"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Q: What is 2+2?"},
    ]


def test_prompt_placeholder_missing_names_source_line(tmp_path: Path, run_collate) -> None:
    write_jsonl(tmp_path / "data" / "source.jsonl", [{"question": "a"}, {"q": "b"}])
    prompt = tmp_path / "prompt.yaml"
    prompt.write_text('user: "Q: {question}"\n')
    config = resources_server("rs", [dataset(type_="benchmark", prompt_config="prompt.yaml")])
    with pytest.raises(UserError, match=r"source\.jsonl:2: .*\{question\}"):
        run_collate(config, prompt_config_path=prompt)
    assert not (tmp_path / "out" / "benchmark.jsonl").exists()


def test_prompt_config_on_a_train_dataset_is_refused(tmp_path: Path, run_collate) -> None:
    write_jsonl(tmp_path / "data" / "source.jsonl", [{"question": "a"}])
    prompt = tmp_path / "prompt.yaml"
    prompt.write_text('user: "Q: {question}"\n')
    config = resources_server("rs", [dataset()])
    with pytest.raises(ConfigError, match="benchmark datasets only"):
        run_collate(config, prompt_config_path=prompt)


def test_flat_and_taskset_declarations_share_one_sidecar(tmp_path: Path, run_collate) -> None:
    write_jsonl(tmp_path / "data" / "source.jsonl", [ROW_B])
    config = {
        "environment_server_routes": {"t": "env"},
        **resources_server("flat", [dataset()]),
        **resources_server("native", [dataset(taskset="t")]),
        **agent("agent", "native"),
        **single_agent_environment("env", "agent", "native"),
    }
    run_collate(config)
    sidecar = json.loads((tmp_path / "data" / "source_metrics.json").read_text())
    assert "taskset" not in sidecar and "agent" not in sidecar
    assert sidecar["Number of examples"] == 1
    assert not list((tmp_path / "data").glob("*_conflict.json"))


def test_misplaced_field_counted_once_despite_repeats(
    tmp_path: Path, run_collate, schema_package
) -> None:
    package = schema_package(
        "resources_servers",
        "code_gen",
        "task_data",
        """
        from pydantic import BaseModel, Field

        class TaskData(BaseModel):
            unit_tests: dict = Field(json_schema_extra={"legacy_location": "verifier_metadata"})
        """,
    )
    write_jsonl(
        tmp_path / "data" / "source.jsonl",
        [{"responses_create_params": RCP, "unit_tests": {"inputs": ["1"], "outputs": ["1"]}}],
    )
    for taskset in (None, "code"):
        config = {
            "environment_server_routes": {"code": "env"},
            **resources_server("rs", [dataset(taskset=taskset, num_repeats=2)], impl="code_gen"),
            **agent("agent", "rs"),
            **single_agent_environment("env", "agent", "rs"),
        }
        with pytest.raises(
            UserError, match=r"wire reads from verifier_metadata.*unit_tests \(1 rows\)"
        ):
            run_collate(config, validation="error", servers_package=package)
        assert not (tmp_path / "out" / "train.jsonl").exists()


def test_positional_ids_warn_once_per_dataset(tmp_path: Path, run_collate) -> None:
    rows = [{"q": "a"}, {"q": "b"}, {"task_id": "c", "q": "c"}]
    config = taskset_config({"source.jsonl": rows}, tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = run_collate(config, validation="error", servers_package="no_such_servers")
    positional = [w for w in caught if "have no task_id" in str(w.message)]
    assert len(positional) == 1
    assert positional[0].category is UserWarning
    assert "2 rows of taskset 't' have no task_id, problem_id, instance_id" in str(
        positional[0].message
    )
    assert report.positional_ids == {"rs/ds0": 2}
    assert any("have no task_id" in w for w in report.warnings)


def test_own_ids_do_not_warn(tmp_path: Path, run_collate) -> None:
    config = taskset_config({"source.jsonl": [{"task_id": "a"}, {"problem_id": "b"}]}, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_collate(config, validation="error", servers_package="no_such_servers")
    ids = [t["task_id"]["task_id"] for t in read_jsonl(tmp_path / "out" / "train.jsonl")]
    assert ids == ["a", "a", "b", "b"]


@pytest.mark.parametrize("taskset", ["t", None])
def test_ids_that_are_not_strings_become_their_str_and_the_report_says_so(
    tmp_path, run_collate, taskset
) -> None:
    rows = [{"task_id": "a"}, {"task_id": 7}, {"task_id": False}, {"instance_id": 1.5}]
    rows += [{"problem_id": 2.0}, {"problem_id": [1]}]
    config = taskset_config({"source.jsonl": rows}, tmp_path, repeats=1)
    if taskset is None:  # a flat dataset: its rows keep their ids, which plans and runs read
        config["rs"]["resources_servers"]["test"]["datasets"][0].pop("taskset")
    warning = r"5 rows have a task ID that is not a string \(first on line 2\)"
    with pytest.warns(UserWarning, match=warning):
        report = run_collate(config, validation="off", servers_package="no_such_servers")
    assert [d.non_string_ids for d in report.datasets] == [5]
    assert report.to_dict()["datasets"][0]["non_string_ids"] == 5
    if taskset is not None:
        ids = [t["task_id"]["task_id"] for t in read_jsonl(tmp_path / "out" / "train.jsonl")]
        assert ids == ["a", "7", "False", "1.5", "2.0", "[1]"]


@pytest.mark.parametrize(
    "files",
    [
        {"source.jsonl": [{"task_id": "a", "q": 1}, {"task_id": "a", "q": 2}]},
        {"source.jsonl": [{"task_id": "a"}, {"problem_id": "a"}]},
        {"one.jsonl": [{"task_id": "a"}], "two.jsonl": [{"task_id": "a"}]},
    ],
)
def test_duplicate_task_ids_are_refused(tmp_path: Path, run_collate, files) -> None:
    config = taskset_config(files, tmp_path)
    with pytest.raises(
        UserError,
        match=r"1 task IDs name more than one task in their taskset: "
        r"t/a \(rs/ds0 line 1; rs/ds\d line \d\)",
    ):
        run_collate(config, validation="error", servers_package="no_such_servers")
    assert not list((tmp_path / "out").glob("*.jsonl"))


def test_duplicate_task_ids_warn_or_pass_silently(tmp_path: Path, run_collate) -> None:
    config = taskset_config(
        {"source.jsonl": [{"task_id": "a", "q": 1}, {"task_id": "a", "q": 2}]}, tmp_path
    )
    with pytest.warns(UserWarning, match="t/a"):
        report = run_collate(config, validation="warn", servers_package="no_such_servers")
    assert len(read_jsonl(tmp_path / "out" / "train.jsonl")) == 4
    assert report.duplicate_task_id_count == 1
    assert "t/a" in report.validation_summary
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = run_collate(config, validation="off")
    assert report.duplicate_task_ids == []


class CustomTaskInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scenario: str
    user_profile: dict[str, str]


def test_custom_task_input_passes_verbatim(tmp_path: Path, run_collate, schema_package) -> None:
    package = schema_package(
        "environment_servers",
        "external_custom",
        "task_data",
        """
        from pydantic import BaseModel, ConfigDict

        class TaskData(BaseModel):
            model_config = ConfigDict(extra="forbid")
            scenario: str
            user_profile: dict[str, str]
        """,
    )
    row = {"scenario": "order", "user_profile": {"name": "Example"}}
    write_jsonl(tmp_path / "data" / "source.jsonl", [row])
    config = {
        "environment_server_routes": {"custom": "environment"},
        **resources_server("rs", [dataset(taskset="custom", num_repeats=2)]),
        **agent("agent", "rs"),
        "environment": {
            "environment_servers": {
                "external_custom": {
                    "entrypoint": "app.py",
                    "agent_server": {"type": "responses_api_agents", "name": "agent"},
                    "resources_server": {"type": "resources_servers", "name": "rs"},
                }
            }
        },
    }
    report = run_collate(config, validation="error", servers_package=package)
    prepared = read_jsonl(tmp_path / "out" / "source_prepare.jsonl")
    assert prepared == [{"task_id": {"taskset": "custom", "task_id": "0"}, "task_input": row}] * 2
    CustomTaskInput.model_validate(prepared[0]["task_input"])
    assert report.datasets[0].validation is not None
    assert report.datasets[0].validation["error_rows"] == 0
    assert report.metrics["train"]["Number of examples"] == 2


def test_changed_data_conflicts_with_the_stored_sidecar(tmp_path: Path, run_collate) -> None:
    rows = [
        {"task_id": "a", "resolved_row": {"persona": "one two"}},
        {"task_id": "b", "resolved_row": {"persona": "one two three four"}},
    ]
    source = write_jsonl(tmp_path / "data" / "source.jsonl", rows)
    config = resources_server("rs", [dataset()])
    run_collate(config, validation="off")
    sidecar = tmp_path / "data" / "source_metrics.json"
    stored = sidecar.read_bytes()
    mtime = sidecar.stat().st_mtime_ns
    run_collate(config, validation="off")  # unchanged data: the sidecar is not rewritten
    assert sidecar.stat().st_mtime_ns == mtime
    old_collated = (tmp_path / "out" / "train.jsonl").read_bytes()
    rows[1]["resolved_row"]["persona"] = "a persona that is now very much longer than before"
    write_jsonl(source, rows)
    with pytest.raises(
        UserError, match="Found conflicting aggregate metrics that need to be corrected"
    ):
        run_collate(config, validation="off")
    assert sidecar.read_bytes() == stored
    assert not (tmp_path / "data" / "source_metrics_conflict.json").exists()
    conflict = tmp_path / "conflicts" / "source_metrics_conflict.json"
    conflict_text = conflict.read_bytes()
    assert (tmp_path / "out" / "train.jsonl").read_bytes() == old_collated
    conflict.unlink()
    run_collate(config, validation="off", overwrite_metrics_conflicts=True)
    assert sidecar.read_bytes() == conflict_text  # what the conflict file held
    assert not conflict.exists()  # overwriting writes the sidecar only


def test_type_metrics_conflict_skips_only_that_type(tmp_path: Path, run_collate) -> None:
    write_jsonl(tmp_path / "data" / "source.jsonl", [{"q": "a"}])
    write_jsonl(tmp_path / "data" / "val.jsonl", [{"q": "b"}])
    config = resources_server(
        "rs", [dataset(), {"name": "v", "type": "validation", "jsonl_fpath": "val.jsonl"}]
    )
    out = tmp_path / "out"
    out.mkdir()
    (out / "train_metrics.json").write_text(json.dumps({"Number of examples": 99}))
    with (
        pytest.warns(UserWarning, match="metrics differ from the stored ones"),
        pytest.raises(UserError, match=r"train_metrics\.json"),
    ):
        run_collate(config, validation="off")
    assert not (out / "train.jsonl").exists()
    assert (out / "validation.jsonl").exists()
    assert (tmp_path / "conflicts" / "train_metrics_conflict.json").exists()


def test_conflicts_of_sidecars_sharing_a_name_get_a_file_each(tmp_path: Path, run_collate) -> None:
    for folder in ("a", "b"):
        write_jsonl(tmp_path / "data" / folder / "source.jsonl", [{"q": folder}])
    config = {
        **resources_server("rs_a", [dataset("x", jsonl_fpath="a/source.jsonl")]),
        **resources_server("rs_b", [dataset("y", jsonl_fpath="b/source.jsonl")]),
    }
    run_collate(config, validation="off")
    for folder in ("a", "b"):
        write_jsonl(tmp_path / "data" / folder / "source.jsonl", [{"q": folder}] * 2)
    with pytest.warns(UserWarning), pytest.raises(UserError) as caught:
        run_collate(config, validation="off")
    conflicts, data = tmp_path / "conflicts", tmp_path / "data"
    first = conflicts / "source_metrics_conflict.json"
    second = conflicts / "source_metrics_conflict.2.json"
    message = str(caught.value)
    for folder, conflict in (("a", first), ("b", second)):
        sidecar = data / folder / "source_metrics.json"
        assert f"{sidecar} differs from the new metrics in {conflict}" in message
    assert json.loads(first.read_text())["name"] == "x"
    assert json.loads(second.read_text())["name"] == "y"


def test_repeats_are_consecutive(tmp_path: Path, run_collate) -> None:
    write_jsonl(tmp_path / "data" / "source.jsonl", [{"q": "a"}, {"q": "b"}])
    config = resources_server("rs", [dataset(num_repeats=3)])
    report = run_collate(config, validation="off")
    rows = read_jsonl(tmp_path / "out" / "train.jsonl")
    assert [r["q"] for r in rows] == list("aaabbb")
    assert report.metrics["train"]["Number of examples"] == 6


def test_prepared_file_names_are_distinct(tmp_path: Path, run_collate) -> None:
    write_jsonl(tmp_path / "data" / "source.jsonl", [{"q": "a"}])
    config = {
        **resources_server("agent_a", [dataset("x"), dataset("y"), dataset("z")]),
        **resources_server("agent_b", [dataset("x")]),
        **resources_server("agent_c", [dataset("same")] * 4),
    }
    # each declaration has its own name, so their sidecar documents differ: allow that here
    with pytest.warns(UserWarning, match="metrics differ from the stored ones: name"):
        report = run_collate(config, validation="off", overwrite_metrics_conflicts=True)
    names = [Path(d.prepared).name for d in report.datasets]
    assert names == [
        "source_prepare.jsonl",
        "source_prepare.agent_a.jsonl",
        "source_prepare.agent_a.z.jsonl",
        "source_prepare.agent_b.jsonl",
        "source_prepare.agent_c.jsonl",
        "source_prepare.agent_c.same.jsonl",
        "source_prepare.agent_c.same.2.jsonl",
        "source_prepare.agent_c.same.3.jsonl",
    ]
    stamps = [read_jsonl(tmp_path / "out" / n)[0]["task_source"] for n in names]
    assert stamps == ["agent_a"] * 3 + ["agent_b"] + ["agent_c"] * 4


def test_validation_failure_report_in_warn_mode(
    tmp_path: Path, run_collate, schema_package
) -> None:
    package = schema_package(
        "resources_servers",
        "qa",
        "task_data",
        "from pydantic import BaseModel\n\nclass TaskData(BaseModel):\n    question: str\n",
    )
    write_jsonl(
        tmp_path / "data" / "source.jsonl",
        [
            {"responses_create_params": RCP, "question": "ok"},
            {"responses_create_params": RCP, "question": 123},
        ],
    )
    config = resources_server("rs", [dataset(num_repeats=3)], impl="qa")
    with pytest.warns(UserWarning, match=r"(?s)1/2 rows failed.*row 2: "):
        report = run_collate(config, validation="warn", servers_package=package)
    assert report.validation_reports[0]["error_rows"] == 1
    assert "1/2 rows failed" in report.validation_summary
    assert len(read_jsonl(tmp_path / "out" / "train.jsonl")) == 6


def test_example_validation_defaults_to_error(tmp_path: Path, run_collate, schema_package) -> None:
    package = schema_package(
        "resources_servers",
        "qa",
        "task_data",
        "from pydantic import BaseModel\n\nclass TaskData(BaseModel):\n    question: str\n",
    )
    write_jsonl(tmp_path / "data" / "source.jsonl", [{"responses_create_params": RCP}])
    config = resources_server("rs", [dataset(type_="example")], impl="qa")
    with pytest.raises(UserError, match="1/1 rows failed"):
        run_collate(config, mode="example_validation", servers_package=package)
    report = run_collate(
        config, mode="example_validation", validation="off", servers_package=package
    )
    assert report.rows == 1


def test_broken_schema_is_skipped_with_a_warning(
    tmp_path: Path, run_collate, schema_package
) -> None:
    package = schema_package("resources_servers", "qa", "task_data", "import does_not_exist\n")
    write_jsonl(
        tmp_path / "data" / "source.jsonl", [{"responses_create_params": RCP, "question": 1}]
    )
    config = resources_server("rs", [dataset(type_="example")], impl="qa")
    with pytest.warns(UserWarning, match="Skipping task_data validation for qa: Failed to import"):
        report = run_collate(
            config, mode="example_validation", validation="error", servers_package=package
        )
    assert report.rows == 1


def test_route_is_validated(tmp_path: Path, run_collate) -> None:
    write_jsonl(tmp_path / "data" / "source.jsonl", [{"q": "a"}])
    config = resources_server("rs", [dataset(taskset="nowhere")])
    with pytest.raises(ConfigError, match="No Environment Server route for taskset 'nowhere'"):
        run_collate(config)


@pytest.mark.parametrize("type_", ["train", "validation", "example", "benchmark"])
def test_a_taskset_dataset_of_any_type_cannot_pin_an_agent(tmp_path, run_collate, type_) -> None:
    write_jsonl(tmp_path / "data" / "source.jsonl", [{"q": "a"}])
    config = swe_config(type_, agent="agent")
    mode = "example_validation" if type_ == "example" else "train_preparation"
    with pytest.raises(
        ConfigError, match=r"Taskset 'swe:test' pins agent 'agent'.*Remove the `agent`"
    ):
        run_collate(config, mode=mode)


def test_datasets_on_model_servers_are_refused(tmp_path: Path, run_collate) -> None:
    config = {"policy": {"responses_api_models": {"openai": {"datasets": [dataset()]}}}}
    with pytest.raises(ConfigError, match="Datasets cannot be declared on model servers"):
        run_collate(config)


def test_out_of_scope_types_are_ignored(tmp_path: Path, run_collate) -> None:
    write_jsonl(tmp_path / "data" / "source.jsonl", [{"q": "a"}])
    config = resources_server("rs", [dataset(type_="example")])
    report = run_collate(config)
    assert report.rows == 0 and report.outputs == []


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b'{"q": "a"}\n{"q": \n', r"source\.jsonl:2: not valid JSON"),
        (b'{"q": "a"}\n[1, 2]\n', r"source\.jsonl:2: expected a JSON object, got list"),
        (b'{"q": NaN}\n', r"source\.jsonl:1: not valid JSON"),
        (b'{"q": "\\ud800"}\n', r"source\.jsonl:1: .*lone surrogate"),
    ],
)
def test_bad_rows_are_refused_and_nothing_is_written(
    tmp_path: Path, run_collate, content: bytes, match: str
) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "source.jsonl").write_bytes(content)
    out = tmp_path / "out"
    out.mkdir()
    (out / "train.jsonl").write_text("previous\n")
    config = resources_server("rs", [dataset()])
    with pytest.raises(UserError, match=match):
        run_collate(config)
    assert sorted(os.listdir(out)) == ["train.jsonl"]
    assert (out / "train.jsonl").read_text() == "previous\n"
    assert not (tmp_path / "data" / "source_metrics.json").exists()


def test_materialize_refusal_names_the_line(tmp_path: Path, run_collate) -> None:
    rows = [{"task_id": "a"}, {"task_id": {"taskset": "x", "task_id": "y"}, "task_input": {}}]
    config = taskset_config({"source.jsonl": rows}, tmp_path)
    with pytest.raises(UserError, match=r"source\.jsonl:2: .*already materialized"):
        run_collate(config, validation="off")


def test_missing_source_file(tmp_path: Path, run_collate) -> None:
    config = resources_server("rs", [dataset(type_="benchmark", prepare_script="prepare.py")])
    with pytest.raises(UserError, match="missing on disk; run `gym-assets prepare`"):
        run_collate(config)
    assert not (tmp_path / "out").exists()


def test_empty_file_warns_and_writes_empty_outputs(tmp_path: Path, run_collate) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "source.jsonl").write_bytes(b"")
    config = resources_server("rs", [dataset()])
    with pytest.warns(UserWarning, match="has no rows"):
        report = run_collate(config)
    assert (tmp_path / "out" / "train.jsonl").read_bytes() == b""
    assert report.metrics["train"]["Number of examples"] == 0


def test_unknown_modes_are_refused(tmp_path: Path, run_collate) -> None:
    with pytest.raises(UserError, match="unknown task_data validation mode"):
        run_collate({}, validation="strict")
    with pytest.raises(UserError, match="unknown collation mode"):
        run_collate({}, mode="everything")


def test_output_is_deterministic_and_sidecar_dir_is_honoured(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "data" / "source.jsonl", [ROW_A, ROW_B, {"x": 1e-06, "y": "é"}])
    config = swe_config()
    sidecars = tmp_path / "sidecars"
    inputs = inputs_of(config, tmp_path / "data", sidecar_dir=sidecars)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = collate(config, inputs, tmp_path / "a", conflicts_dir=lambda: tmp_path)
        second = collate(config, inputs, tmp_path / "b", conflicts_dir=lambda: tmp_path)
    assert [(Path(o.path).name, o.sha256) for o in first.outputs if "/a/" in o.path] == [
        (Path(o.path).name, o.sha256) for o in second.outputs if "/b/" in o.path
    ]
    assert (sidecars / "source_metrics.json").exists()
    assert not (tmp_path / "data" / "source_metrics.json").exists()
    assert b'"x":1e-6,"y":"\xc3\xa9"' in (tmp_path / "a" / "train.jsonl").read_bytes()


def test_hook_metrics_for_materialized_source_rows(tmp_path: Path, run_collate) -> None:
    task = {
        "task_id": {"taskset": "s", "task_id": "1"},
        "task_input": {"expected_resolution": "refund"},
    }
    write_jsonl(tmp_path / "data" / "source.jsonl", [task])
    config = resources_server("rs", [dataset()], impl="support_desk")
    report = run_collate(config, validation="off")
    assert report.metrics["train"]["Resolution"]["counts"] == {"refund": 1}
    assert report.metrics["train"]["Number of tasks"] == 1


def test_collation_input_defaults() -> None:
    from gym_assets.config.model import iter_declared_datasets

    (declared,) = iter_declared_datasets(resources_server("rs", [dataset()]))
    item = CollationInput(declared, Path("/d/source.jsonl"))
    assert item.sidecar_path == Path("/d/source_metrics.json")
    assert item.label == "rs/ds"


def duplicate_rows(count: int, offset: int = 0) -> list[dict[str, Any]]:
    """Rows with own IDs, collector-index IDs and positional rows; some IDs repeat."""
    rows: list[dict[str, Any]] = []
    for n in range(offset, offset + count):
        if n % 5 == 0:
            rows.append({"_ng_task_index": n % 40, "q": n})  # index IDs "0".."39" repeat
        elif n % 7 == 0:
            rows.append({"q": n})  # positional: never a duplicate
        else:
            rows.append({"task_id": f"id-{n % 150}", "q": n})
    return rows


def test_duplicates_are_named_exactly_when_id_hashes_spill_and_collide(
    tmp_path: Path, run_collate, monkeypatch
) -> None:
    files = {"one.jsonl": duplicate_rows(300), "two.jsonl": duplicate_rows(200, offset=77)}
    config = taskset_config(files, tmp_path, repeats=1)

    def collated() -> tuple[int, list[str], str]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = run_collate(config, validation="warn", servers_package="no_such_servers")
        summary = report.validation_summary
        return report.duplicate_task_id_count, report.duplicate_task_ids, summary

    first_places: dict[str, str] = {}
    expected = []  # in source order, each later place against the first
    for label, rows in (("rs/ds0", files["one.jsonl"]), ("rs/ds1", files["two.jsonl"])):
        for line, row in enumerate(rows, start=1):
            if "task_id" in row or "_ng_task_index" in row:
                task_id = str(row.get("task_id", row.get("_ng_task_index")))
                here = f"{label} line {line}"
                first = first_places.setdefault(task_id, here)
                if first != here:
                    expected.append(f"t/{task_id} ({first}; {here})")
    count, named, summary = collated()  # every ID hash fits in memory
    assert (count, named) == (len(expected), expected[:100])
    assert named[0] == "t/0 (rs/ds0 line 1; rs/ds0 line 41)" and count > 200
    # Hashes spilled to disk every 16 IDs, and IDs of one length hashing alike: the hashes
    # only nominate candidates; the report comes from the IDs themselves.
    monkeypatch.setattr("gym_assets.spill.HASH_BUFFER", 16)
    monkeypatch.setattr("gym_assets.tasks.collate.hash", len, raising=False)
    assert collated() == (count, named, summary)


def test_one_declaration_s_taskset_is_its_prepared_file_under_a_second_name(
    tmp_path: Path, run_collate
) -> None:
    write_jsonl(tmp_path / "data" / "source.jsonl", [{"q": "a"}, {"q": "b"}])
    report = run_collate(resources_server("rs", [dataset(num_repeats=2)]), validation="off")
    collated, prepared = tmp_path / "out" / "train.jsonl", tmp_path / "out" / "source_prepare.jsonl"
    assert os.path.samefile(collated, prepared)  # one copy on disk
    assert [r["q"] for r in read_jsonl(collated)] == list("aabb")
    outputs = {Path(o.path).name: (o.sha256, o.rows) for o in report.outputs}
    expected = (hashlib.sha256(collated.read_bytes()).hexdigest(), 4)
    assert outputs["train.jsonl"] == outputs["source_prepare.jsonl"] == expected
    assert report.rows == 4


def test_several_declarations_are_concatenated_into_their_own_file(
    tmp_path: Path, run_collate
) -> None:
    write_jsonl(tmp_path / "data" / "source.jsonl", [{"q": "a"}])
    write_jsonl(tmp_path / "data" / "other.jsonl", [{"q": "b"}])
    config = resources_server("rs", [dataset(), dataset("ds2", jsonl_fpath="other.jsonl")])
    report = run_collate(config, validation="off")
    out = tmp_path / "out"
    parts = [(out / name).read_bytes() for name in ("source_prepare.jsonl", "other_prepare.jsonl")]
    assert (out / "train.jsonl").read_bytes() == b"".join(parts)
    assert not os.path.samefile(out / "train.jsonl", out / "source_prepare.jsonl")
    assert report.rows == 2


def test_collation_keeps_nothing_per_row(tmp_path: Path, monkeypatch) -> None:
    # small buffers, so that 2,000 and 10,000 rows both spill: what stays is per run (4 kB)
    monkeypatch.setattr("gym_assets.spill.HASH_BUFFER", 2000)
    rows = [
        {"task_id": f"task-{n:06d}", "expected_answer": str(n * 7), "responses_create_params": RCP}
        for n in range(10_000)
    ]
    peaks = []
    for count in (2000, 10_000):
        config = taskset_config({f"rows{count}.jsonl": rows[:count]}, tmp_path, repeats=1)
        tracemalloc.start()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                inputs = inputs_of(config, tmp_path / "data")
                out = tmp_path / f"out{count}"
                collate(config, inputs, out, conflicts_dir=lambda: tmp_path, servers_package="none")
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    # keeping the hashes of the IDs and of the answer strings takes 8,000 x 3 x 8 bytes
    assert peaks[1] - peaks[0] < 120_000
