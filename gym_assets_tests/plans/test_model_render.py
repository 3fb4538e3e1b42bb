"""The v1 format: serialisation, strict model and schema, tolerant reader (docs/plans.md)."""

from __future__ import annotations

import json
import re

import pytest
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from gym_assets.errors import UserError
from gym_assets.plans import render
from gym_assets.plans.model import (
    SCHEMA_LABEL,
    EvalPlan,
    GymStamp,
    Plan,
    PlannedTask,
    TaskTable,
    load_plan,
    plan_json_schema,
    validate_plan,
)
from gym_assets.plans.render import plan_text, render_json, write_plan
from gym_assets_tests.plans.helpers import plan_of, row

DIGEST = "sha256:" + "0" * 64


def document(**overrides: object) -> dict:
    doc = plan_of([row("a")]).to_document()
    doc.update(overrides)
    return doc


def test_case_2_tasks_hold_only_id_and_digest() -> None:
    parsed = json.loads(plan_text(plan_of([row("a")])))
    assert [set(task) for task in parsed["tasks"]] == [{"task_id", "digest"}]
    assert set(parsed["tasks"][0]["task_id"]) == {"taskset", "task_id"}


def test_case_12_row_order_does_not_change_the_file() -> None:
    rows = [row("a", "one"), row("b", "two"), row("c", "three")]
    assert plan_text(plan_of(rows)) == plan_text(plan_of(rows[::-1]))


def test_case_13_round_trip() -> None:
    plan = plan_of([row("a")])
    parsed = json.loads(plan_text(plan))
    assert parsed["schema"] == SCHEMA_LABEL
    assert validate_plan(parsed) == plan
    assert EvalPlan.model_validate(parsed) == EvalPlan.model_validate(plan.to_document())


def test_case_14_schema() -> None:
    schema = plan_json_schema()
    assert schema["title"] == "EvalPlan"
    assert schema["properties"]["schema"]["const"] == SCHEMA_LABEL
    assert schema["required"] == ["gym", "benchmark", "tasks"]
    assert schema["$defs"]["PlanGym"]["required"] == ["version", "commit"]
    assert schema["$defs"]["TaskId"]["properties"]["task_id"]["minLength"] == 1
    Draft202012Validator.check_schema(schema)


def test_schema_descriptions_say_what_the_reference_says_first() -> None:
    """Each field's description opens with the reference's meaning (docs/plans.md)."""
    schema = plan_json_schema()
    defs = schema["$defs"]
    opening = {
        "config_paths": "Config files the benchmark was selected with",
        "name": "The benchmark dataset name",
        "commit": "Git commit of the checkout that ran the command, with `-dirty` appended",
        "version": "The package version string",
        "digest": '"sha256:" + SHA-256 of the task input as canonical JSON',
    }
    found = {
        **defs["PlanBenchmark"]["properties"],
        **defs["PlanGym"]["properties"],
        **defs["PlanTask"]["properties"],
    }
    for field, text in opening.items():
        assert found[field]["description"].startswith(text), field
    assert defs["TaskId"]["description"] == "Identifies one task within a run-qualified taskset."
    assert (
        "null when the plan covers every task"
        in (schema["properties"]["selected_task_ids"]["description"])
    )
    assert schema["description"].startswith(
        "The tasks of one benchmark, each listed once and sorted by task id"
    )


def test_file_layout_matches_json_dumps_exactly() -> None:
    plan = Plan(
        gym=GymStamp("0.5.1", None),
        benchmark="démo",
        config_paths=("a.yaml", "/abs/b.yaml"),
        selected_task_ids=("a", 'q"\\é'),
        tasks=TaskTable.of([PlannedTask("t:1", 'q"\\é', DIGEST), PlannedTask("t:1", "a", DIGEST)]),
    )
    text = plan_text(plan)
    assert (
        text == json.dumps(plan.to_document(), sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    )
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert "démo" in text and '"commit": null' in text
    keys = [line.strip().split('"')[1] for line in text.splitlines() if line.startswith('  "')]
    assert keys == ["benchmark", "gym", "schema", "selected_task_ids", "tasks"]


@pytest.mark.parametrize("count", [0, 1, 2, 3, 4, 5])
def test_streamed_tasks_match_json_dumps_across_chunk_boundaries(monkeypatch, count) -> None:
    monkeypatch.setattr(render, "_CHUNK", 2)
    plan = plan_of([row(f"t{n}") for n in range(count)])
    expected = json.dumps(plan.to_document(), sort_keys=True, indent=2, ensure_ascii=False)
    assert plan_text(plan) == expected + "\n"
    assert ('"tasks": []' in expected) == (count == 0)


def test_every_written_plan_validates_against_the_schema(tmp_path) -> None:
    validator = Draft202012Validator(plan_json_schema())
    for plan in (plan_of([row("b"), row("a")]), plan_of([row("a")], selected=["a"]), plan_of([])):
        write_plan(tmp_path / "p" / "plan.json", plan)
        validator.validate(json.loads((tmp_path / "p" / "plan.json").read_text("utf-8")))


def test_schema_rejects_what_the_model_rejects() -> None:
    validator = Draft202012Validator(plan_json_schema())
    bad = document(schema="nemo-gym.eval-plan.v2")
    assert not validator.is_valid(bad)
    bad = document()
    bad["tasks"][0]["digest"] = "sha256:ABC"
    assert not validator.is_valid(bad)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda doc: doc["tasks"][0].update(extra=1),
        lambda doc: doc["tasks"][0]["task_id"].update(extra=1),
        lambda doc: doc.update(schema="nemo-gym.eval-plan.v2"),
        lambda doc: doc.update(notes="hi"),
        lambda doc: doc["gym"].pop("commit"),
        lambda doc: doc["tasks"][0]["task_id"].update(task_id=""),
        lambda doc: doc["tasks"][0].update(digest="md5:abc"),
    ],
)
def test_case_43_44_strict_model_refuses(mutate) -> None:
    doc = document()
    mutate(doc)
    with pytest.raises(ValidationError):
        validate_plan(doc)


def test_case_44_null_commit_is_valid() -> None:
    doc = document()
    doc["gym"]["commit"] = None
    assert validate_plan(doc).gym.commit is None


def test_example_plan_of_the_reference_validates() -> None:
    example = {
        "benchmark": {"config_paths": ["benchmarks/demo_swe/opencode.yaml"], "name": "demo_swe"},
        "gym": {"commit": "0123456789abcdef0123456789abcdef01234567-dirty", "version": "0.5.1"},
        "schema": SCHEMA_LABEL,
        "selected_task_ids": ["demo__demo-1"],
        "tasks": [
            {
                "digest": "sha256:d0571aa0e4c8f2b5c76c70548c7a8bb2051524bbed9453f678fdc0176d9f24e1",
                "task_id": {"task_id": "demo__demo-1", "taskset": "demo_swe"},
            }
        ],
    }
    assert render_json(validate_plan(example).to_document()) == render_json(example)


def test_task_table_is_a_sorted_sequence_of_planned_tasks() -> None:
    tasks = [
        PlannedTask("y", "b", DIGEST),
        PlannedTask("x", "b", DIGEST),
        PlannedTask("x", "a", DIGEST),
    ]
    table = TaskTable.of(tasks)
    assert list(table) == [tasks[2], tasks[1], tasks[0]]
    assert table[0].task_id == "a" and isinstance(table[-1], PlannedTask)
    assert table[1:] == TaskTable.of(tasks[:2]) == tuple(tasks[1::-1])
    assert table != TaskTable.of(tasks[:2]) and len(table) == 3
    with pytest.raises(ValueError):
        TaskTable(["x"], [], [])


def test_write_creates_parents_and_overwrites(tmp_path) -> None:
    target = tmp_path / "a" / "b" / "plan.json"
    write_plan(target, plan_of([row("a")]))
    write_plan(target, plan_of([row("b")]))
    assert json.loads(target.read_text("utf-8"))["tasks"][0]["task_id"]["task_id"] == "b"
    assert [p.name for p in target.parent.iterdir()] == ["plan.json"]


def test_load_plan_round_trip_and_ignores_unknown_keys(tmp_path) -> None:
    plan = plan_of([row("b"), row("a")], selected=["a", "b"])
    doc = plan.to_document()
    doc["added_later"] = {"x": 1}
    doc["gym"]["build"] = "x"
    doc["tasks"][0]["weight"] = 2
    doc["tasks"][0]["task_id"]["env"] = "e"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc), "utf-8")
    loaded = load_plan(path)
    assert loaded == plan
    assert loaded.digests[("bench", "a")] == plan.tasks[0].digest


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda tasks: tasks.reverse(), "tasks.1 (task 'a', taskset 'bench') is out of order "),
        (lambda tasks: tasks.insert(1, tasks[0]), "tasks.1 (task 'a', taskset 'bench') is listed"),
    ],
    ids=["reversed", "twice"],
)
def test_load_plan_refuses_tasks_out_of_order_or_twice(tmp_path, edit, fragment) -> None:
    doc = plan_of([row("b"), row("a")]).to_document()
    edit(doc["tasks"])
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc), "utf-8")
    with pytest.raises(UserError, match=re.escape(fragment)):
        load_plan(path)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "plan file not found"),
        ("{", "not a JSON plan file"),
        ("[]", "expected a JSON object"),
        ('{"tasks": []}', "its schema label is None"),
        ('{"schema": "nemo-gym.eval-plan.v2", "tasks": []}', "eval-plan.v2"),
        (f'{{"schema": "{SCHEMA_LABEL}"}}', "'tasks' must be a list"),
        (f'{{"schema": "{SCHEMA_LABEL}", "tasks": []}}', "gym: Field required"),
    ],
)
def test_load_plan_refusals(tmp_path, content, fragment) -> None:
    path = tmp_path / "plan.json"
    if content is not None:
        path.write_text(content, "utf-8")
    with pytest.raises(UserError, match=fragment) as caught:
        load_plan(path)
    assert caught.value.path == str(path)


def test_load_plan_names_the_bad_task(tmp_path) -> None:
    doc = document()
    doc["tasks"].append({"task_id": {"taskset": "bench", "task_id": "z"}, "digest": "nope"})
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc), "utf-8")
    with pytest.raises(UserError, match=r"tasks\.1\.digest"):
        load_plan(path)


def test_the_pins_digest_follows_the_tasks_not_the_stamp() -> None:
    """A run records the digest of what its plan pins: re-planning the same tasks with another
    gym version keeps it; another task, digest or selection changes it."""
    rows = [row("a", "one"), row("b", "two")]
    plan = validate_plan(plan_of(rows).to_document())
    restamped = validate_plan(document(gym={"version": "9.9.9", "commit": "abc"}) | {
        "tasks": plan.to_document()["tasks"]
    })  # fmt: skip
    assert restamped.pins_digest == plan.pins_digest
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", plan.pins_digest)
    others = [plan_of([row("a", "one"), row("b", "changed")]), plan_of(rows, selected=["a"])]
    assert all(other.pins_digest != plan.pins_digest for other in others)
