"""Claiming outputs: missing, empty and ours are taken; anything else is refused untouched."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gym_assets.errors import OutputError
from gym_assets.outputs.claims import claim_dir, claimed_dir, rebuilt_dir, renewed_dir, write_file
from gym_assets.outputs.markers import (
    MARKER_NAME,
    PLAN_FILE,
    ROLLOUTS_RUN,
    TASKSET,
    file_marker,
    file_marker_path,
    write_dir_marker,
)
from gym_assets.outputs.targets import Target
from gym_assets.workspace import Workspace
from gym_assets_tests.filesystems import snapshot

FOREIGN = "exists and was not written by gym-assets (no product marker)"


def taskset(path: Path, roots: Workspace) -> Target:
    return Target(path, TASKSET, roots.configs)


def test_a_missing_directory_is_created_with_its_parents_and_marked(roots, tmp_path):
    out = tmp_path / "a" / "b" / "out"
    assert claim_dir(taskset(out, roots)) is True
    assert json.loads((out / MARKER_NAME).read_text()) == {
        "format": 1,
        "product": "taskset",
        "written_by": "gym-assets",
    }
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]  # the lock is gone too


def test_an_empty_directory_is_taken_and_ours_is_kept_as_it_is(roots, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    assert claim_dir(taskset(out, roots)) is False
    (out / "rows.jsonl").write_text("{}\n")
    before = snapshot(out)
    assert claim_dir(taskset(out, roots)) is False
    assert snapshot(out) == before


def foreign_dir(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    return out


def test_a_foreign_directory_is_refused_and_left_as_it_was(roots, tmp_path):
    out = foreign_dir(tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(OutputError) as caught:
        claim_dir(taskset(out, roots))
    assert str(caught.value) == (f"{out}: {FOREIGN}; choose another --out or remove it yourself")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "marker",
    [
        '{"format": 1, "product": "taskset", "written_by": "someone else"}',
        '{"format": 2, "product": "taskset", "written_by": "gym-assets"}',
        "not json",
    ],
)
def test_a_marker_that_is_not_ours_counts_as_none(roots, tmp_path, marker):
    out = tmp_path / "out"
    out.mkdir()
    (out / MARKER_NAME).write_text(marker)
    with pytest.raises(OutputError, match="no product marker"):
        claim_dir(taskset(out, roots))


def test_a_product_of_another_kind_is_refused(roots, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    write_dir_marker(out, ROLLOUTS_RUN)
    with pytest.raises(OutputError, match="holds a rollouts run, not a taskset; choose another"):
        claim_dir(taskset(out, roots))


def test_a_data_root_product_refusal_says_how_to_get_past_it(roots):
    out = roots.data / "tasksets" / "units"
    out.mkdir(parents=True)
    (out / "old.jsonl").write_text("{}\n")  # as a data root from before markers has it
    with pytest.raises(OutputError, match="remove it yourself or choose another data root"):
        claim_dir(Target.of(out, TASKSET, roots))


def test_a_failed_first_write_leaves_no_trace(roots, tmp_path):
    new, empty = tmp_path / "new", tmp_path / "empty"
    empty.mkdir()
    for out in (new, empty):
        with pytest.raises(RuntimeError), claimed_dir(taskset(out, roots)):
            raise RuntimeError("failed before writing anything")
    assert not new.exists()
    assert empty.is_dir() and not any(empty.iterdir())


def test_a_failed_write_keeps_what_it_wrote_and_the_marker(roots, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(RuntimeError), claimed_dir(Target(out, ROLLOUTS_RUN, roots.configs)):
        (out / "rollouts.jsonl").write_text("{}\n")
        raise RuntimeError("killed midway")
    assert sorted(p.name for p in out.iterdir()) == [MARKER_NAME, "rollouts.jsonl"]
    assert claim_dir(Target(out, ROLLOUTS_RUN, roots.configs)) is False  # resumable


def rebuild(target: Target, files: dict[str, str]) -> None:
    with rebuilt_dir(target) as staging:
        for name, text in files.items():
            (staging / name).write_text(text)


def test_a_rebuilt_directory_replaces_ours_wholesale_and_leaves_nothing_beside(roots, tmp_path):
    out = tmp_path / "out"
    rebuild(taskset(out, roots), {"a.jsonl": "1\n", "b.jsonl": "2\n"})
    rebuild(taskset(out, roots), {"a.jsonl": "3\n"})
    assert sorted(p.name for p in out.iterdir()) == [MARKER_NAME, "a.jsonl"]
    assert (out / "a.jsonl").read_text() == "3\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configs", "out"]
    assert out.stat().st_mode & 0o777 == 0o755


def test_a_failed_rebuild_leaves_the_old_directory_byte_identical(roots, tmp_path):
    out = tmp_path / "out"
    rebuild(taskset(out, roots), {"a.jsonl": "1\n"})
    before = snapshot(tmp_path)
    with pytest.raises(RuntimeError), rebuilt_dir(taskset(out, roots)) as staging:
        (staging / "a.jsonl").write_text("half")
        raise RuntimeError("collation failed")
    assert snapshot(tmp_path) == before


def test_a_renewed_directory_holds_only_what_its_latest_use_wrote(roots, tmp_path):
    out = tmp_path / "out"
    with renewed_dir(taskset(out, roots)) as held:
        (held / "a.json").write_text("1")
    assert sorted(p.name for p in out.iterdir()) == [MARKER_NAME, "a.json"]
    with pytest.raises(RuntimeError), renewed_dir(taskset(out, roots)) as held:
        assert sorted(p.name for p in held.iterdir()) == [MARKER_NAME]
        (held / "b.json").write_text("2")
        raise RuntimeError("the use failed after writing")
    assert sorted(p.name for p in out.iterdir()) == [MARKER_NAME, "b.json"]
    with renewed_dir(taskset(out, roots)):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configs"]  # nothing left: no dir


def test_a_foreign_directory_is_never_renewed(roots, tmp_path):
    out = foreign_dir(tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match=re.escape(FOREIGN)), renewed_dir(taskset(out, roots)):
        pass
    assert snapshot(tmp_path) == before


def test_a_foreign_directory_is_refused_before_any_work(roots, tmp_path):
    out = foreign_dir(tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(OutputError, match=re.escape(FOREIGN)), rebuilt_dir(taskset(out, roots)):
        pytest.fail("the block ran for a foreign output")
    assert snapshot(tmp_path) == before


def test_the_swap_never_retires_a_directory_that_stopped_being_ours(roots, tmp_path):
    out = tmp_path / "out"
    rebuild(taskset(out, roots), {"a.jsonl": "1\n"})
    with (
        pytest.raises(OutputError, match=re.escape(FOREIGN)),
        rebuilt_dir(taskset(out, roots)) as staging,
    ):
        (staging / "a.jsonl").write_text("2\n")
        (out / MARKER_NAME).unlink()  # someone else took the directory meanwhile
        (out / "theirs.txt").write_text("theirs")
    assert sorted(p.name for p in out.iterdir()) == ["a.jsonl", "theirs.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configs", "out"]


def test_leftovers_of_a_killed_rebuild_are_swept_only_when_ours(roots, tmp_path):
    out = tmp_path / "out"
    ours, empty, foreign = (
        tmp_path / f".out.{n}" for n in ("staging-x1", "retired-x2", "staging-x3")
    )
    for path in (ours, empty, foreign):
        path.mkdir()
    write_dir_marker(ours, TASKSET)
    (foreign / "keep.txt").write_text("not ours")
    rebuild(taskset(out, roots), {"a.jsonl": "1\n"})
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.staging-x3", "configs", "out"]
    assert (foreign / "keep.txt").read_text() == "not ours"


def plan_file(path: Path, roots: Workspace) -> Target:
    return Target(path, PLAN_FILE, roots.configs)


def test_a_file_product_is_marked_beside_with_its_digest(roots, tmp_path):
    out = tmp_path / "plan.json"
    digest = write_file(plan_file(out, roots), [b"{}", b"\n"])
    assert out.read_bytes() == b"{}\n"
    marker = file_marker(out)
    assert marker is not None and marker.sha256 == {digest}
    write_file(plan_file(out, roots), [b"[]\n"])
    assert out.read_bytes() == b"[]\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        file_marker_path(out).name,
        "configs",
        "plan.json",
    ]


def test_an_empty_file_is_taken(roots, tmp_path):
    out = tmp_path / "plan.json"
    out.touch()
    write_file(plan_file(out, roots), [b"{}\n"])
    assert out.read_bytes() == b"{}\n"


@pytest.mark.parametrize("marked", [False, True])
def test_a_file_that_is_not_what_we_wrote_is_refused(roots, tmp_path, marked):
    out = tmp_path / "plan.json"
    if marked:
        write_file(plan_file(out, roots), [b"{}\n"])
    out.write_text('{"theirs": true}\n')  # replaced by hand since, or never ours
    before = snapshot(tmp_path)
    with pytest.raises(OutputError) as caught:
        write_file(plan_file(out, roots), [b"{}\n"])
    reason = "was changed after gym-assets wrote it" if marked else FOREIGN
    assert str(caught.value) == f"{out}: {reason}; choose another --out or remove it yourself"
    assert snapshot(tmp_path) == before


def test_a_failed_file_write_keeps_the_old_file_ours(roots, tmp_path):
    out = tmp_path / "plan.json"
    write_file(plan_file(out, roots), [b"{}\n"])
    before = snapshot(tmp_path)

    def pieces():
        yield b"{"
        raise RuntimeError("rendering failed")

    with pytest.raises(RuntimeError):
        write_file(plan_file(out, roots), pieces())
    assert snapshot(tmp_path) == before
    write_file(plan_file(out, roots), [b"[]\n"])  # still ours


def test_an_inline_marker_makes_the_file_its_own_marker(roots, tmp_path):
    page = tmp_path / "checks.md"
    target = Target(page, PLAN_FILE, roots.configs)
    page.write_text("# Checks\n<!-- generated -->\nold\n")
    write_file(
        target, [b"# Checks\n<!-- generated -->\nnew\n"], inline_marker=b"<!-- generated -->"
    )
    assert page.read_text().endswith("new\n")
    assert not file_marker_path(page).exists()
    page.write_text("# Notes written by hand\n")
    with pytest.raises(OutputError, match=re.escape(FOREIGN)):
        write_file(target, [b"x"], inline_marker=b"<!-- generated -->")
    assert page.read_text() == "# Notes written by hand\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checks.md", "configs"]


def test_the_current_directory_as_output_is_staged_and_locked_beside_it(
    roots, tmp_path, monkeypatch
):
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    rebuild(taskset(Path("."), roots), {"a.jsonl": "1\n"})
    assert sorted(p.name for p in out.iterdir()) == [MARKER_NAME, "a.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configs", "out"]
