"""The plan builder: order, ids, digests, repeats, flat rows and every refusal."""

from __future__ import annotations

import random
import re
import tracemalloc

import pytest

from gym_assets.errors import UserError
from gym_assets.plans.build import (
    PlanBuilder,
    build_plan,
    build_plan_from_file,
    refuse_prompt_template,
    require_one_benchmark,
)
from gym_assets.plans.canonical import canonical_json, digest
from gym_assets.plans.render import plan_text
from gym_assets.tasks.materialize import materialize_task
from gym_assets_tests.plans.helpers import (
    humaneval_like_rows,
    ids,
    plan_of,
    row,
    spec,
    write_jsonl,
)

DIGEST_OF_ROW_A = "sha256:d20af4f6d56984cfb591b9704a77a7a48042d59399ca4bfa25c7371ce1af3adb"


def test_case_1_tasks_sorted_with_digest_of_the_whole_row() -> None:
    plan = plan_of([row("b"), row("a")])
    assert ids(plan) == ["a", "b"]
    assert {task.taskset for task in plan.tasks} == {"bench"}
    assert plan.tasks[0].digest == DIGEST_OF_ROW_A == digest(row("a"))
    assert plan.selected_task_ids is None


def test_case_3_declared_taskset() -> None:
    plan = plan_of([row("a")], taskset="declared_taskset")
    assert plan.tasks[0].taskset == "declared_taskset"


def test_case_4_routing_and_bookkeeping_keys_do_not_change_the_digest() -> None:
    stamped = row("a", task_source="agent_1", agent_ref={"name": "agent_1"}, _ng_task_index=7)
    stamped.update(skills_ref="k", _ng_rollout_index=1, _ng_custom_metadata={"x": 1})
    assert plan_of([stamped]).tasks == plan_of([row("a")]).tasks


def test_case_5_content_changes_the_digest() -> None:
    assert plan_of([row("a", "one")]).tasks[0].digest != plan_of([row("a", "two")]).tasks[0].digest


def test_id_value_is_hashed_but_nested_ng_keys_are_kept() -> None:
    nested = row("a", verifier_metadata={"_ng_note": 1})
    assert plan_of([nested]).tasks[0].digest == digest(nested)
    assert plan_of([row("a")]).tasks[0].digest != plan_of([row("c")]).tasks[0].digest


@pytest.mark.parametrize(
    "source",
    [
        row("a", agent_ref={"name": "x"}, _ng_task_index=2, task_source="s", skills_ref="k"),
        {"problem_id": 7, "task_id": None, "run_script": None, "verifier_metadata": False},
        {"instance_id": "i", "_ng_rollout_id": "r", "nested": {"agent_ref": 1, "_ng_x": 2}},
    ],
)
def test_digest_is_that_of_the_collated_task_input(source: dict) -> None:
    expected = digest(materialize_task(source, "bench")["task_input"])
    assert plan_of([source]).tasks[0].digest == expected


def test_case_6_problem_id_and_instance_id() -> None:
    rows = [
        {"problem_id": "p1", "responses_create_params": {"input": []}},
        {"instance_id": "repo__repo-1", "responses_create_params": {"input": []}},
    ]
    assert ids(plan_of(rows)) == ["p1", "repo__repo-1"]


def test_case_21_id_precedence() -> None:
    rows = [
        {"task_id": 0, "problem_id": "problem", "instance_id": "instance"},
        {"task_id": None, "problem_id": "problem2", "instance_id": "instance"},
        {"problem_id": None, "instance_id": "instance3"},
    ]
    assert ids(plan_of(rows)) == ["0", "instance3", "problem2"]


def test_ids_that_are_not_strings_are_planned_as_their_str_and_reported(tmp_path) -> None:
    rows = [row("a"), row(7), {"task_id": True}, {"problem_id": 1.5}, {"instance_id": [1]}]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    heard: list[str] = []
    plan = build_plan_from_file(path, spec(), heard.append)
    assert [task.task_id for task in plan.tasks] == ["1.5", "7", "True", "[1]", "a"]
    assert heard == [
        f"{path}: 4 rows have a task ID that is not a string (first on line 2); each is used "
        'as Python\'s str() of it (7 -> "7", true -> "True", 1.5 -> "1.5"), so 7 and "7" are '
        "the same task. Write the IDs as strings to say so"
    ]


def test_case_7_rows_without_id_are_refused() -> None:
    rows = [row("a"), {"task_name": "terminal-bench/x", "responses_create_params": {"input": []}}]
    with pytest.raises(UserError) as caught:
        plan_of(rows)
    assert re.search(r"1 of 2 tasks have no task id .*rows \[1\]", caught.value.message)
    assert caught.value.message.startswith("Benchmark 'bench':")
    assert "task_id, problem_id, instance_id" in caught.value.message


@pytest.mark.parametrize("index", [3, None, -1, True, "5"])
def test_case_24_34_no_positional_or_index_fallback(index: object) -> None:
    with pytest.raises(UserError, match=r"1 of 1 tasks have no task id .*rows \[0\]"):
        plan_of([{"_ng_task_index": index, "responses_create_params": {"input": []}}])


def test_missing_ids_list_at_most_five_rows_and_lines(tmp_path) -> None:
    rows = [row("a")] + [{"x": n} for n in range(8)]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    with pytest.raises(UserError) as caught:
        build_plan_from_file(path, spec())
    message = caught.value.message
    assert "8 of 9 tasks have no task id" in message
    assert "rows [1, 2, 3, 4, 5] and 3 more" in message
    assert "file lines [2, 3, 4, 5, 6]" in message
    assert caught.value.path == str(path)


def test_missing_ids_are_reported_before_materialized_rows() -> None:
    materialized = {"task_id": {"taskset": "bench", "task_id": "a"}, "task_input": {}}
    with pytest.raises(UserError, match=r"1 of 2 tasks have no task id .*rows \[1\]"):
        plan_of([materialized, {"x": 1}])


@pytest.mark.parametrize(
    "materialized",
    [
        {"task_id": {"taskset": "bench", "task_id": "a"}, "task_input": {"prompt": "solve it"}},
        {"task_id": {"taskset": "bench", "task_id": "a"}},
        {"task_id": "a", "task_input": {"prompt": "solve it"}},
    ],
)
def test_case_8_26_already_materialized_rows(materialized: dict) -> None:
    with pytest.raises(UserError) as caught:
        plan_of([row("b"), materialized])
    assert caught.value.message.startswith("Benchmark 'bench': Expected a flat dataset row")
    assert "(row 1)" in caught.value.message


def test_materialized_row_in_a_file_names_the_line(tmp_path) -> None:
    materialized = {"task_id": {"taskset": "bench", "task_id": "a"}, "task_input": {}}
    path = write_jsonl(tmp_path / "rows.jsonl", [row("b"), materialized])
    with pytest.raises(UserError, match="Expected a flat dataset row") as caught:
        build_plan_from_file(path, spec())
    assert caught.value.render().startswith(f"{path}:2: Benchmark 'bench': Expected a flat")


def test_case_35_empty_id_is_refused_with_the_benchmark_prefix() -> None:
    with pytest.raises(UserError, match=r"^Benchmark 'bench': task ID must be a non-empty"):
        plan_of([row("")])


def test_empty_taskset_is_refused() -> None:
    with pytest.raises(UserError, match="taskset must be a non-empty string"):
        plan_of([row("a")], taskset="")


def test_unhashable_row_is_refused_with_its_position() -> None:
    with pytest.raises(UserError, match=r"^Benchmark 'bench': .*lone UTF-16 surrogate.*row 0"):
        plan_of([row("a", "\ud800")])


def test_case_9_duplicate_ids() -> None:
    with pytest.raises(UserError, match=re.escape("not unique: ['a']")):
        plan_of([row("a", "one"), row("a", "two"), row("b")])


def test_duplicates_list_at_most_ten_sorted() -> None:
    names = [f"t{n:02d}" for n in range(12, 0, -1)]
    with pytest.raises(UserError) as caught:
        plan_of([row(name) for name in names * 2])
    shown = [f"t{n:02d}" for n in range(1, 11)]
    assert f"not unique: {shown!r} (and 2 more)" in caught.value.message


def test_case_10_selection() -> None:
    plan = plan_of([row("a"), row("b"), row("c")], selected=["c", "a"])
    assert ids(plan) == ["a", "c"]
    assert plan.selected_task_ids == ("a", "c")


def test_case_11_unknown_selected_ids() -> None:
    with pytest.raises(UserError, match=re.escape("Benchmark 'bench' has no tasks with ids ['z']")):
        plan_of([row("a")], selected=["a", "z", "z"])


def test_case_37_repeated_selection_is_deduplicated() -> None:
    plan = plan_of([row("a"), row("b")], selected=["b", "b"])
    assert ids(plan) == ["b"] and plan.selected_task_ids == ("b",)


def test_case_38_duplicates_refused_even_outside_the_selection() -> None:
    with pytest.raises(UserError, match=re.escape("not unique: ['a']")):
        plan_of([row("a"), row("a"), row("b")], selected=["b"])


def test_explicitly_empty_selection_gives_no_tasks() -> None:
    plan = plan_of([row("a")], selected=[])
    assert plan.tasks == () and plan.selected_task_ids == ()


def test_case_39_zero_rows_give_an_empty_plan() -> None:
    plan = plan_of([])
    assert plan.tasks == () and plan.selected_task_ids is None


def test_case_36_integer_problem_id() -> None:
    plan = plan_of([{"problem_id": 7, "responses_create_params": {"input": []}}])
    assert ids(plan) == ["7"]
    assert plan.tasks[0].digest == (
        "sha256:083a0cb15dc5805c45a44c4f9fe702953565afb298321b299433f14c007130da"
    )


def test_case_40_non_ascii_is_hashed_as_raw_utf8() -> None:
    source = {
        "instance_id": "demo__demo-2",
        "responses_create_params": {"input": [{"role": "user", "content": "Café ✓"}]},
        "score": 1.0,
    }
    assert "Café ✓" in canonical_json(source)
    assert plan_of([source]).tasks[0].digest == (
        "sha256:207ecf9611c76ed547b80cd9051460c432951867193400ad7278e9442f910f9d"
    )


def test_case_41_taskset_is_not_hashed() -> None:
    bench, other = plan_of([row("a")]).tasks[0], plan_of([row("a")], taskset="x").tasks[0]
    assert bench.digest == other.digest and (bench.taskset, other.taskset) == ("bench", "x")


def test_case_42_code_point_order() -> None:
    assert ids(plan_of([row("2"), row("10")])) == ["10", "2"]
    assert ids(plan_of([row("a"), row("B")])) == ["B", "a"]


def test_source_rows_are_not_modified() -> None:
    source = row("a", agent_ref={"name": "x"}, _ng_task_index=1)
    snapshot = repr(source)
    plan_of([source])
    assert repr(source) == snapshot


def test_builder_keeps_only_ids_and_digests() -> None:
    builder = PlanBuilder("bench", "bench")
    prompts = ["x" * 10_000 + str(n) for n in range(200)]  # 2 MB of rows
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n, prompt in enumerate(prompts):
            builder.add(row(f"t{n}", prompt))
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 100_000  # about 200 bytes a task: an id and a 71-character digest
    tasks, _ = builder.finish()
    assert len(tasks) == 200 and all(len(task.digest) == 71 for task in tasks)


def test_file_and_memory_builds_agree(tmp_path) -> None:
    rows = humaneval_like_rows(20)
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    assert build_plan_from_file(path, spec()) == build_plan(rows, spec())


def test_164_humaneval_like_rows_plan_is_byte_identical_under_shuffles(tmp_path) -> None:
    rows = humaneval_like_rows()
    chosen = [f"HumanEval/{n}" for n in (163, 7, 42, 100, 0)]
    first = plan_text(build_plan_from_file(write_jsonl(tmp_path / "a.jsonl", rows), spec()))
    again = plan_text(build_plan_from_file(write_jsonl(tmp_path / "a.jsonl", rows), spec()))
    shuffled_rows = rows[:]
    random.Random(4).shuffle(shuffled_rows)
    shuffled = plan_text(
        build_plan_from_file(write_jsonl(tmp_path / "b.jsonl", shuffled_rows), spec())
    )
    assert first == again == shuffled
    assert first.count('"task_id": "HumanEval/') == 164

    selected = plan_text(build_plan(rows, spec(selected=chosen)))
    reordered = chosen[::-1] + chosen[:2]
    assert plan_text(build_plan(shuffled_rows, spec(selected=reordered))) == selected
    assert selected.count('"digest"') == 5


def test_require_one_benchmark() -> None:
    assert require_one_benchmark(["x"]) == "x"
    with pytest.raises(
        UserError, match="A plan covers exactly one benchmark, but the config declares 2"
    ):
        require_one_benchmark(["fake_bench", "other_bench"])
    with pytest.raises(UserError, match="declares 0"):
        require_one_benchmark([])


def test_prompt_templates_are_refused() -> None:
    refuse_prompt_template("bench", None)
    with pytest.raises(UserError, match="plans do not support prompt templates yet"):
        refuse_prompt_template("bench", "benchmarks/prompts/generic/math.yaml")


def outcome(rows: list, **kwargs) -> str:
    """The plan's text, or the refusal's message."""
    try:
        return plan_text(plan_of(rows, **kwargs))
    except UserError as exc:
        return f"refused: {exc}"


@pytest.mark.parametrize(
    "case",
    [
        {},
        {"selected": ["HumanEval/3", "HumanEval/150", "HumanEval/77"]},
        {"selected": ["HumanEval/3", "nope", "HumanEval/77", "also-missing"]},
        {"duplicates": [5, 5, 5, 80, 120]},
        {"duplicates": list(range(0, 160, 11)), "selected": ["HumanEval/1"]},
    ],
)
def test_plans_spilled_to_disk_are_the_plans_built_in_memory(monkeypatch, case) -> None:
    rows = humaneval_like_rows()
    rows += [row(f"HumanEval/{n}", f"again {n}") for n in case.get("duplicates", [])]
    random.Random(9).shuffle(rows)
    selected = case.get("selected")
    in_memory = outcome(rows, selected=selected)
    monkeypatch.setattr("gym_assets.spill.RECORD_BUFFER", 7)  # 24 sorted runs and more
    monkeypatch.setattr("gym_assets.spill.MAX_FAN_IN", 5)  # and merges of merges
    assert outcome(rows, selected=selected) == in_memory
    assert in_memory.startswith("refused") == ("duplicates" in case or "nope" in str(case))


def test_duplicates_are_listed_sorted_up_to_ten_then_counted(monkeypatch) -> None:
    monkeypatch.setattr("gym_assets.spill.RECORD_BUFFER", 3)
    rows = [row(f"t{n:02d}", str(copy)) for n in range(30, 0, -1) for copy in range(1 + n % 3)]
    with pytest.raises(UserError) as refused:
        plan_of(rows)
    listed = [f"t{n:02d}" for n in range(1, 31) if n % 3][:10]
    assert f"task ids are not unique: {listed!r} (and 10 more)" in str(refused.value)


def test_a_spilled_plan_reads_items_and_slices_from_the_start(monkeypatch) -> None:
    monkeypatch.setattr("gym_assets.spill.RECORD_BUFFER", 4)
    tasks = plan_of(humaneval_like_rows(30)).tasks
    table = plan_of(humaneval_like_rows(30)).tasks[:]
    assert len(tasks) == 30 and list(tasks) == list(table)
    assert tasks[0] == table[0] and tasks[-1] == table[29] and tasks[7] == table[7]
    assert tasks[2:9] == table[2:9] and tasks[::-3] == table[::-3]
    with pytest.raises(IndexError):
        tasks[30]
