"""Shards of one run: spans, runs, resume, and the merge with its refusals (real runs of the
bundled ``units`` benchmark against the reference model, offline)."""

from __future__ import annotations

import errno
import io
import os
import shutil
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.errors import UserError
from gym_assets.outputs.lock import held
from gym_assets.outputs.markers import ROLLOUTS_INVENTORY
from gym_assets.outputs.targets import Target
from gym_assets.rollouts import run, shards
from gym_assets.rollouts.analysis.results import read_result
from gym_assets.rollouts.collection.files import RunFiles
from gym_assets.rollouts.collection.manifest import read_manifest
from gym_assets.rollouts.gateway.capture import CAPTURE_SUFFIX
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import run_rollouts
from gym_assets.rollouts.shards import Shard, merge_shards, run_shard, shard_count, shards_of
from gym_assets_tests.rollouts.collection.conftest import REPO, Products
from gym_assets_tests.rollouts.same_run import assert_same_run, rows_by_key

BENCHMARK = "units"  # 30 one-call tasks


@pytest.mark.parametrize("count", [1, 2, 3, 7, 31])
def test_shards_cover_every_rollout_exactly_once(count):
    for total in (0, 1, 2, 29, 30, 31, 1000):
        spans = [shard.span(total) for shard in shards_of(count)]
        assert [i for span in spans for i in span] == list(range(total))
        assert max(map(len, spans)) - min(map(len, spans)) <= 1  # as even as they can be


def test_a_shard_is_written_i_of_n():
    assert Shard.parse("2/4") == Shard(2, 4) and str(Shard(2, 4)) == "2/4"
    assert Shard(2, 4).name == "2-of-4"
    for bad in ("0/2", "3/2", "2", "a/b", "1/0", "-1/2"):
        with pytest.raises(UserError, match="I/N"):
            Shard.parse(bad)


def _no_links(source, destination):
    """``os.link`` where the filesystem has no hard links."""
    raise OSError(errno.EXDEV, "Invalid cross-device link")


class Shards:
    """Shards and whole runs of ``units`` in one temp data root."""

    def __init__(self, root: Path):
        self.products = Products(root / "data")
        self.products.plan(BENCHMARK)
        self.catalog = self.products.catalog
        self.harness = load_harnesses(self.catalog.loaded.data)["simple_agent"]
        self.upstream = upstream_config(mode="reference")
        self.root = root

    def run(self, shard: Shard, shards="shards", **options):
        return run_shard(
            self.catalog,
            BENCHMARK,
            self.harness,
            self.root / shards,
            shard,
            self.upstream,
            RunOptions(**options),
        )

    def whole(self, out: Path, **options):
        return run_rollouts(
            self.catalog, BENCHMARK, self.harness, out, self.upstream, RunOptions(**options)
        )

    def merge(self, shards="shards", out="merged"):
        return merge_shards(
            self.catalog, BENCHMARK, self.harness, self.root / shards, self.root / out
        )


@pytest.fixture(scope="module")
def three(tmp_path_factory) -> Shards:
    """Three finished shards and a one-process run of the same benchmark."""
    shards = Shards(tmp_path_factory.mktemp("shards"))
    for shard in shards_of(3):
        shards.run(shard)
    shards.whole(shards.root / "one")
    return shards


def test_merged_shards_are_the_run_one_process_makes(three):
    for shard in shards_of(3):
        records = rows_by_key(RunFiles(three.root / "shards" / shard.name).records)
        assert sorted(records) == [(i, 0) for i in shard.span(30)]
    result = three.merge()
    assert result.rollouts == 30 and result.dispatched == 0
    assert result.totals.outcomes.measured == 30 and result.totals.reward_mean == 1.0
    assert result.harness["harness"] == "simple_agent"
    assert result.analysis.report.is_file()
    assert_same_run(three.root / "one", three.root / "merged")
    assert "merged 3 shards" in result.notes[0]


def test_a_shard_analyses_its_own_span_and_the_merge_the_whole_run(three):
    for shard in shards_of(3):
        files = RunFiles(three.root / "shards" / shard.name)
        result = read_result(files.result)
        # Not the 30 of the partition with 20 pending: a shard's analysis costs its span.
        assert result.planned == len(shard.span(30)) == result.outcomes["measured"] == 10
        assert read_manifest(files).rollouts == 30  # the inventory is still the whole run's
    assert read_result(RunFiles(three.root / "one").result).planned == 30


def test_a_partition_is_materialized_once_and_each_shard_reads_its_span(tmp_path, monkeypatch):
    made, read = [], []
    materialize, check = run.materialize_inputs, run.check_inventory
    monkeypatch.setattr(
        run, "materialize_inputs", lambda *a, **k: made.append(1) or materialize(*a, **k)
    )
    monkeypatch.setattr(run, "check_inventory", lambda *a: read.append(check(*a)) or read[-1])
    three = Shards(tmp_path)
    for shard in shards_of(3):
        three.run(shard)
    assert len(made) == 1  # the first shard made the partition's inventory; the others read it
    assert [len(inputs) for inputs in read] == [10, 10, 10]  # each parsed its span, not all 30
    partition = RunFiles(tmp_path / "shards" / shards.INVENTORY_DIR)
    for shard in shards_of(3):
        own = RunFiles(tmp_path / "shards" / shard.name)
        for name in ("materialized_inputs", "manifest", "plan"):  # one copy on disk
            assert os.path.samefile(getattr(own, name), getattr(partition, name)), name
    three.merge()
    three.whole(tmp_path / "one")
    assert_same_run(tmp_path / "one", tmp_path / "merged")


def test_shards_copy_the_partition_inventory_where_the_filesystem_has_no_links(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(os, "link", _no_links)
    two = Shards(tmp_path)
    for shard in shards_of(2):
        two.run(shard)
    partition = RunFiles(tmp_path / "shards" / shards.INVENTORY_DIR).materialized_inputs
    own = RunFiles(tmp_path / "shards" / "2-of-2").materialized_inputs
    assert own.read_bytes() == partition.read_bytes() and not os.path.samefile(own, partition)
    two.merge()
    two.whole(tmp_path / "one")
    assert_same_run(tmp_path / "one", tmp_path / "merged")


def test_shards_started_together_make_the_partition_inventory_once(tmp_path, monkeypatch):
    three = Shards(tmp_path)
    made = []
    materialize = run.materialize_inputs

    def slowly(*args, **kwargs):
        made.append(1)
        time.sleep(1.0)  # the other shard finds the inventory being written, and waits
        return materialize(*args, **kwargs)

    monkeypatch.setattr(run, "materialize_inputs", slowly)
    partition = tmp_path / "shards" / shards.INVENTORY_DIR

    def prepare(_: int) -> RunFiles:
        return run.prepare_inventory(three.catalog, BENCHMARK, three.harness, partition)

    with ThreadPoolExecutor(2) as pool:
        prepared = list(pool.map(prepare, range(2)))
    assert made == [1] and prepared[0] == prepared[1]
    assert read_manifest(prepared[0]).rollouts == 30


def test_a_shard_waiting_for_the_partition_inventory_says_who_is_making_it(tmp_path):
    three = Shards(tmp_path)
    partition = tmp_path / "shards" / shards.INVENTORY_DIR
    told = io.StringIO()
    target = Target.of(partition, ROLLOUTS_INVENTORY, three.catalog.workspace)
    with ThreadPoolExecutor(1) as pool:
        with held(target):  # as the shard making it holds it
            waiting = pool.submit(
                run.prepare_inventory,
                *(three.catalog, BENCHMARK, three.harness, partition),
                progress_stream=told,
            )
            for _ in range(600):  # the other shard tells, then waits
                if told.getvalue():
                    break
                time.sleep(0.1)
            assert not waiting.done()
        prepared = waiting.result()
    assert told.getvalue() == (
        f"waiting for pid {os.getpid()}, which is making the inventory in {partition}\n"
    )
    assert read_manifest(prepared).rollouts == 30


def test_a_shard_of_other_settings_writes_the_partition_inventory_again(tmp_path):
    two = Shards(tmp_path)
    two.run(Shard(1, 2))
    two.run(Shard(2, 2), repeats=2)
    assert read_manifest(RunFiles(tmp_path / "shards" / shards.INVENTORY_DIR)).rollouts == 60
    assert read_manifest(RunFiles(tmp_path / "shards" / "1-of-2")).rollouts == 30  # as it ran
    with pytest.raises(UserError, match=r"shard 2/2 is of another run than shard 1/2"):
        two.merge()


def test_a_shard_refuses_a_partition_inventory_written_again_under_it(tmp_path, monkeypatch):
    two = Shards(tmp_path)
    partition = tmp_path / "shards" / shards.INVENTORY_DIR
    build = run._build_servers

    def rewritten_meanwhile(*args, **kwargs):  # after the shard read its span, before it links
        options = RunOptions(repeats=2)
        run.prepare_inventory(two.catalog, BENCHMARK, two.harness, partition, options)
        return build(*args, **kwargs)

    monkeypatch.setattr(run, "_build_servers", rewritten_meanwhile)
    with pytest.raises(UserError, match="written again for other settings"):
        two.run(Shard(1, 2))
    monkeypatch.undo()
    assert two.run(Shard(1, 2), repeats=2).rollouts == 30  # the settings it holds now


def test_a_resumed_shard_leaves_the_partition_inventory_as_it_is(tmp_path):
    two = Shards(tmp_path)
    for shard in shards_of(2):
        two.run(shard, repeats=2)
    partition = RunFiles(tmp_path / "shards" / shards.INVENTORY_DIR).materialized_inputs
    made = partition.stat().st_ino
    records = RunFiles(tmp_path / "shards" / "2-of-2").records
    records.write_bytes(b"".join(records.read_bytes().splitlines(keepends=True)[:20]))
    resumed = two.run(Shard(2, 2), resume=True)  # no --repeats: the run's own settings
    assert resumed.dispatched == 10 and partition.stat().st_ino == made
    assert two.merge().rollouts == 60


def test_a_resume_refuses_a_finished_shard_with_a_doubled_record(tmp_path):
    two = Shards(tmp_path)
    for shard in shards_of(2):
        two.run(shard)
    records = RunFiles(tmp_path / "shards" / "2-of-2").records
    first = records.read_bytes().splitlines(keepends=True)[0]
    records.write_bytes(records.read_bytes() + first)  # nothing left to run, but not whole
    with pytest.raises(UserError, match="2 records of rollout"):
        two.run(Shard(2, 2), resume=True)


def test_shards_corrupt_the_rollouts_one_process_corrupts(tmp_path):
    three = Shards(tmp_path)
    three.upstream = upstream_config(mode="reference", corrupt_fraction=0.2, seed=5)
    for shard in shards_of(3):
        three.run(shard)
    merged = three.merge()
    three.whole(tmp_path / "one")
    assert_same_run(tmp_path / "one", tmp_path / "merged")  # the same 6 of 30, chosen over all
    assert merged.totals.reward_mean == pytest.approx(0.8)


def test_merge_reads_one_inventory_view_and_links_the_captures(three, monkeypatch):
    views, rows = [], []
    read_planned = shards.read_planned
    monkeypatch.setattr(shards, "read_planned", lambda *a: views.append(a) or read_planned(*a))
    monkeypatch.setattr(shards, "check_inventory", lambda *a: rows.append(a))
    three.merge(out="merged-once")
    assert len(views) == 1  # shards 2 and 3 are checked by digest and share shard 1's view
    assert not rows  # no input row is held: the end of a run reads keys, routes and digests
    merged = RunFiles(three.root / "merged-once").capture_dir
    names = sorted(p.name for p in merged.iterdir() if p.name.endswith(CAPTURE_SUFFIX))
    assert len(names) == 30
    for shard in shards_of(3):
        own = RunFiles(three.root / "shards" / shard.name).capture_dir
        for capture in own.glob(f"*{CAPTURE_SUFFIX}"):
            assert os.path.samefile(capture, merged / capture.name)


def test_merge_reads_each_shard_log_once_to_check_it(three, monkeypatch):
    reads = Counter()
    read_jsonl = shards.read_jsonl
    monkeypatch.setattr(shards, "read_jsonl", lambda path: reads.update([path]) or read_jsonl(path))
    three.merge(out="merged-one-pass")
    for shard in shards_of(3):
        files = RunFiles(three.root / "shards" / shard.name)
        assert (reads[files.records], reads[files.failures]) == (1, 1)  # strays and ledger


def test_merge_copies_the_captures_where_the_filesystem_has_no_links(three, monkeypatch):
    monkeypatch.setattr(os, "link", _no_links)
    three.merge(out="merged-copied")
    merged = RunFiles(three.root / "merged-copied").capture_dir
    own = RunFiles(three.root / "shards" / "2-of-3").capture_dir
    for capture in own.glob(f"*{CAPTURE_SUFFIX}"):
        copy = merged / capture.name
        assert copy.read_bytes() == capture.read_bytes() and not os.path.samefile(capture, copy)


def test_merge_refuses_a_shard_whose_inventory_was_edited(three):
    copy = _copy_shards(three, "edited")
    inventory = RunFiles(copy / "3-of-3").materialized_inputs
    inventory.write_bytes(inventory.read_bytes().replace(b"units", b"unitz", 1))
    with pytest.raises(UserError, match="the inventory was changed after the run"):
        three.merge("edited", "out-edited")


def _copy_shards(three: Shards, name: str) -> Path:
    copy = three.root / name
    shutil.copytree(three.root / "shards", copy)
    return copy


def test_merge_refuses_a_missing_shard(three):
    copy = _copy_shards(three, "missing")
    shutil.rmtree(copy / "2-of-3")
    with pytest.raises(UserError, match=r"shard 2/3 has not run here"):
        three.merge("missing", "out-missing")
    assert not (three.root / "out-missing").exists()


def test_merge_refuses_an_unfinished_shard(three):
    copy = _copy_shards(three, "unfinished")
    records = RunFiles(copy / "3-of-3").records
    lines = records.read_bytes().splitlines(keepends=True)
    records.write_bytes(b"".join(lines[:4]))  # killed after 4 of its 10
    with pytest.raises(UserError, match=r"shard 3/3 is unfinished: 6 of its 10 rollouts"):
        three.merge("unfinished", "out-unfinished")


def test_merge_refuses_shards_of_two_counts(three):
    copy = _copy_shards(three, "two-counts")
    shutil.copytree(copy / "1-of-3", copy / "1-of-2")
    with pytest.raises(UserError, match=r"shards of 2 different counts \(2, 3\)"):
        three.merge("two-counts", "out-counts")


def test_merge_refuses_a_shard_of_another_run(three, tmp_path):
    copy = _copy_shards(three, "foreign")
    shutil.rmtree(copy / "2-of-3")
    three.whole(copy / "2-of-3", repeats=2)  # another inventory in shard 2's place
    with pytest.raises(UserError, match=r"shard 2/3 is of another run than shard 1/3"):
        three.merge("foreign", "out-foreign")


def test_merge_refuses_a_row_outside_the_shards_span(three):
    copy = _copy_shards(three, "duplicated")
    shutil.rmtree(copy / "3-of-3")
    three.whole(copy / "3-of-3")  # the whole run in shard 3's place: rows of shards 1 and 2
    with pytest.raises(UserError, match=r"rollout \(\d+, 0\), which shard 3/3 does not cover"):
        three.merge("duplicated", "out-duplicated")


def test_merge_refuses_shards_of_another_benchmark_asked(three):
    three.products.plan("arith")
    with pytest.raises(UserError, match="cannot resume: the run differs"):
        merge_shards(three.catalog, "arith", three.harness, three.root / "shards", three.root / "o")


def test_merge_refuses_a_root_without_shards(three):
    with pytest.raises(UserError, match="holds no shard"):
        shard_count(three.root / "data")


def test_a_resume_runs_only_the_unfinished_shards(tmp_path):
    shards = Shards(tmp_path)
    for shard in shards_of(2):
        shards.run(shard)
    records = RunFiles(tmp_path / "shards" / "2-of-2").records
    lines = records.read_bytes().splitlines(keepends=True)
    records.write_bytes(b"".join(lines[:9]) + lines[9][:20])  # killed mid-line after 9 of 15
    first, second = (shards.run(shard, resume=True) for shard in shards_of(2))
    assert first.skipped and first.dispatched == 0 and "finished before" in first.notes[0]
    assert not second.skipped and second.dispatched == 6 and second.rollouts == 15
    shards.merge()
    shards.whole(tmp_path / "one")
    assert_same_run(tmp_path / "one", tmp_path / "merged")


def test_the_command_line_runs_shards_and_merges_them(tmp_path, capsys):
    def cli(*argv: str | Path) -> int:
        roots = ["--configs", str(REPO / "configs"), "--data-root", str(tmp_path / "data")]
        return main(["rollouts", *map(str, argv), *roots])

    run = ["--benchmark", BENCHMARK, "--harness", "simple_agent"]
    merge = ["merge", *run, "--shards", tmp_path / "shards", "--out", tmp_path / "run"]
    assert cli(*run, "--out", tmp_path / "shards", "--shard", "2/2") == 0
    assert "shard 2/2: 15 rollouts, 15 dispatched" in capsys.readouterr().out
    assert cli(*merge) == 1
    assert "shard 1/2 has not run here" in capsys.readouterr().err
    assert cli(*run, "--out", tmp_path / "shards", "--shard", "1/2") == 0
    assert cli(*run, "--out", tmp_path / "shards", "--shard", "1/2", "--resume") == 0
    assert "15 rollouts, 0 dispatched" in capsys.readouterr().out
    assert cli(*merge) == 0
    assert "mean 1.000 over 30 of 30 planned" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        cli(*run, "--out", tmp_path / "shards", "--shard", "3/2")
    assert exit_.value.code == 2 and "no shard 3/2" in capsys.readouterr().err
