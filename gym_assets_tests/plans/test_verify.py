"""Plan vs tasks: added / removed / changed, repeats, flat rows, selection."""

from __future__ import annotations

import pytest

from gym_assets.errors import UserError
from gym_assets.plans.build import file_tasks
from gym_assets.plans.canonical import digest
from gym_assets.plans.model import PlannedTask, TaskKey
from gym_assets.plans.verify import taskset_tasks, verify_plan
from gym_assets.tasks.materialize import materialize_task
from gym_assets_tests.plans.helpers import plan_of, row, write_jsonl


def collated(*rows: dict, taskset: str = "bench", repeats: int = 1) -> list[dict]:
    """Rows as collation writes them: one materialized task per repeat, stamps on top."""
    out = []
    for index, source in enumerate(rows):
        task = materialize_task({**source, "task_source": "agent"}, taskset)
        out.extend([{**task, "_ng_task_index": index}] * repeats)
    return out


def test_matching_taskset(tmp_path) -> None:
    plan = plan_of([row("a"), row("b")])
    path = write_jsonl(tmp_path / "taskset.jsonl", collated(row("b"), row("a"), repeats=3))
    diff = verify_plan(plan, taskset_tasks(path))
    assert diff.matches
    assert (diff.added, diff.removed, diff.changed, diff.inconsistent) == ((), (), (), ())


def test_added_removed_changed(tmp_path) -> None:
    plan = plan_of([row("a"), row("b"), row("c")])
    tasks = collated(row("a"), row("b", "edited"), row("d"), row("e"))
    diff = verify_plan(plan, taskset_tasks(write_jsonl(tmp_path / "t.jsonl", tasks)))
    assert not diff.matches
    assert diff.added == (TaskKey("bench", "d"), TaskKey("bench", "e"))
    assert diff.removed == (TaskKey("bench", "c"),)
    assert diff.changed == (TaskKey("bench", "b"),)


def test_other_taskset_is_added_and_removed() -> None:
    plan = plan_of([row("a")])
    diff = verify_plan(plan, [PlannedTask("other", "a", digest(row("a")))])
    assert diff.added == (TaskKey("other", "a"),) and diff.removed == (TaskKey("bench", "a"),)


def test_repeats_must_agree() -> None:
    plan = plan_of([row("a"), row("b")])
    good = digest(row("a"))
    tasks = [
        PlannedTask("bench", "a", good),
        PlannedTask("bench", "a", "sha256:" + "1" * 64),
        PlannedTask("bench", "b", digest(row("b"))),
    ]
    diff = verify_plan(plan, tasks)
    assert diff.inconsistent == (TaskKey("bench", "a"),)
    assert diff.changed == (TaskKey("bench", "a"),)
    assert not diff.matches


def test_selection_aware() -> None:
    plan = plan_of([row("a"), row("b"), row("c")], selected=["a", "c"])
    everything = [PlannedTask("bench", i, digest(row(i))) for i in ("a", "b", "c")]
    assert verify_plan(plan, everything).matches
    diff = verify_plan(plan, everything[:2])
    assert diff.removed == (TaskKey("bench", "c"),) and diff.added == ()


def test_flat_rows_are_reported_unchecked(tmp_path) -> None:
    plan = plan_of([row("a")])
    path = write_jsonl(tmp_path / "t.jsonl", [*collated(row("a")), row("a"), row("b")])
    diff = verify_plan(plan, taskset_tasks(path))
    assert diff.unchecked_rows == 2
    assert not diff.matches and diff.changed == ()


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ({"task_id": {"taskset": "bench", "task_id": "a"}}, "needs both a task_id object"),
        ({"task_id": "a", "task_input": {}}, "needs both a task_id object"),
        ({"task_id": {"taskset": "", "task_id": "a"}, "task_input": {}}, r"task_id\.taskset"),
        ({"task_id": {"taskset": "b", "task_id": "a", "x": 1}, "task_input": {}}, r"task_id\.x"),
        ({"task_id": {"taskset": "b", "task_id": "a"}, "task_input": [1]}, "must be a JSON object"),
    ],
)
def test_malformed_task_rows_name_the_line(tmp_path, bad, fragment) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [*collated(row("a")), bad])
    with pytest.raises(UserError, match=fragment) as caught:
        list(taskset_tasks(path))
    assert caught.value.line == 2


def test_benchmark_rows_as_the_source(tmp_path) -> None:
    rows = [row("a"), row("b")]
    plan = plan_of(rows)
    path = write_jsonl(tmp_path / "rows.jsonl", [row("a", "edited"), row("b"), row("c")])
    diff = verify_plan(plan, file_tasks(path, "bench", "bench"))
    assert diff.changed == (TaskKey("bench", "a"),) and diff.added == (TaskKey("bench", "c"),)
    assert verify_plan(plan, file_tasks(write_jsonl(path, rows[::-1]), "bench", "bench")).matches
