"""Real filesystem failures at the write layer: one clear line, the previous output intact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gym_assets.errors import OutputError
from gym_assets.fileio import atomic_write_bytes, atomic_writer
from gym_assets.outputs.claims import claim_dir, write_file
from gym_assets.outputs.markers import PLAN_FILE, TASKSET
from gym_assets.outputs.targets import Target
from gym_assets.rollouts.collection.files import AppendLog
from gym_assets_tests.filesystems import fill, immutable, snapshot, tmpfs


@pytest.fixture
def full(tmp_path: Path):
    """A 64 KiB tmpfs holding ``old.json``, then filled to the last byte."""
    with tmpfs(tmp_path / "full", "size=64k") as mount:
        atomic_write_bytes(mount / "old.json", b'{"old": true}\n')
        fill(mount, leave=0)
        yield mount


def test_disk_full_is_one_line_and_the_old_file_stays(full):
    before = snapshot(full)
    with pytest.raises(OutputError) as caught:
        atomic_write_bytes(full / "old.json", b"x" * 100_000)
    assert str(caught.value) == f"{full / 'old.json'}: cannot write: No space left on device"
    assert snapshot(full) == before  # old bytes kept, no temp file left


def test_disk_full_while_appending_a_record(full):
    log = AppendLog(full / "rollouts.jsonl")
    try:
        with pytest.raises(OutputError, match=r"rollouts.jsonl: cannot write: No space left"):
            log.write({"payload": "x" * 100_000})
    finally:
        log.close()


def test_a_record_the_disk_cuts_short_is_cut_back_off(tmp_path):
    """The disk fills inside a row: the OS takes its first bytes and refuses the rest. The
    ledger keeps the rows before it and none of that one (a cut last line before)."""
    with tmpfs(tmp_path / "small", "size=64k") as mount:
        fill(mount, leave=10_000)
        path = mount / "rollouts.jsonl"
        log = AppendLog(path)
        try:
            with pytest.raises(OutputError, match=r"cannot write: No space left on device$"):
                for index in range(100):
                    log.write({"index": index, "payload": "x" * 3000})
        finally:
            log.close()
        data = path.read_bytes()
    rows = [json.loads(text) for text in data.splitlines()]
    assert data.endswith(b"\n") and [row["index"] for row in rows] == list(range(len(rows)))
    assert len(rows) >= 1


def test_a_product_on_a_full_disk_is_refused_in_one_line(full, tmp_path):
    target = Target(full / "plan.json", PLAN_FILE, tmp_path / "configs")
    with pytest.raises(OutputError, match=r"plan.json: cannot write: No space left on device$"):
        write_file(target, [b"{}\n" * 10_000])
    assert not target.path.exists()


def test_a_read_only_filesystem(tmp_path):
    with tmpfs(tmp_path / "ro", "ro,size=64k") as mount:
        with pytest.raises(OutputError) as caught:
            claim_dir(Target(mount / "out", TASKSET, tmp_path / "configs"))
        assert str(caught.value) == f"{mount / 'out'}: cannot write: Read-only file system"


def test_an_immutable_directory_even_for_root(tmp_path):
    directory = tmp_path / "locked"
    directory.mkdir()
    atomic_write_bytes(directory / "plan.json", b"{}\n")
    before = snapshot(directory)
    with immutable(directory):
        with pytest.raises(OutputError) as caught:
            atomic_write_bytes(directory / "plan.json", b"[]\n")
        message = str(caught.value)
    assert message == f"{directory / 'plan.json'}: cannot write: Operation not permitted"
    assert snapshot(directory) == before


def test_an_oserror_about_another_file_is_not_blamed_on_the_output(tmp_path):
    with pytest.raises(FileNotFoundError), atomic_writer(tmp_path / "out.json") as handle:
        handle.write((tmp_path / "missing-input.json").read_text())
    assert list(tmp_path.iterdir()) == []
