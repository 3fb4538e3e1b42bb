"""One writer per output: a second one is refused at once, naming the holder's pid."""

from __future__ import annotations

import signal

import pytest

from gym_assets.errors import OutputError
from gym_assets.outputs.claims import claim_dir
from gym_assets.outputs.lock import lock_path
from gym_assets.outputs.markers import TASKSET
from gym_assets.outputs.targets import Target
from gym_assets_tests.filesystems import lock_held_elsewhere, snapshot


def test_a_second_writer_is_refused_with_the_holders_pid_and_nothing_written(roots, tmp_path):
    out = tmp_path / "out"
    with lock_held_elsewhere(out) as holder:
        before = snapshot(tmp_path)
        with pytest.raises(OutputError) as caught:
            claim_dir(Target(out, TASKSET, roots.configs))
        assert str(caught.value) == (
            f"{out}: is in use by pid {holder.pid} (another gym-assets run); wait for it or "
            "choose another --out"
        )
        assert snapshot(tmp_path) == before
    assert claim_dir(Target(out, TASKSET, roots.configs)) is True
    assert not lock_path(out).exists()  # released and removed: nothing left beside the output


def test_a_data_root_writer_is_told_to_wait(roots):
    out = roots.data / "tasksets" / "units"
    out.parent.mkdir(parents=True)
    with lock_held_elsewhere(out), pytest.raises(OutputError, match=r"wait for it to finish$"):
        claim_dir(Target.of(out, TASKSET, roots))


def test_a_killed_holder_leaves_no_lock_only_a_file_the_next_run_takes(roots, tmp_path):
    out = tmp_path / "out"
    with lock_held_elsewhere(out) as holder:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        assert lock_path(out).is_file()
    assert claim_dir(Target(out, TASKSET, roots.configs)) is True
    assert not lock_path(out).exists()
