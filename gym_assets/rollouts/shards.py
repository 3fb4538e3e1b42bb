"""One benchmark × harness run split into shards that run apart and merge into one run.

    <shards>/inventory/    the partition's inventory, manifest and plan copy, made once
    <shards>/<I>-of-<N>/   shard I of N: a rollouts run directory of its own

A shard is a run of the whole partition (its inventory, manifest and plan copy are the whole
run's, so every shard of a partition describes the same run, byte for byte) that reads,
dispatches and analyses only a contiguous span of the inventory (it parses and holds its span,
and its metrics, statistics and report are its span's: a shard of a huge partition pays for
its span, not the partition; the merge analyses the whole run). The first shard to start makes
the partition's inventory under ``inventory/`` while the others wait for it
(``run.prepare_inventory``); each then links those files into its directory (one copy on
disk) and reads its span. A shard asked for other settings makes it again (shards already run
keep theirs, and the merge refuses to join two runs). Shard I of N covers positions
``[(I-1)·T//N, I·T//N)`` of the T planned rollouts, so N shards cover every rollout exactly
once whatever T is, and a shard's span does not move between a run and its resume. Shards run
anywhere that sees the same data root (another process, another Celery worker or pod).

A shard is finished when its ledger leaves nothing of its span to dispatch. A resume
(``RunOptions.resume``) skips a finished shard and continues an unfinished one from its ledger,
so a retried partition re-runs only what did not finish.

``merge_shards`` refuses a missing, unfinished or foreign shard (of another run, another count,
or holding a row outside its span), then writes the run directory as a run in one process
would: the plan copy, manifest and inventory copied (so byte-identical), every shard's records
and failures, their captures (hard links), and the metrics, statistics, snapshot and report
made from those files (``publish_results``). Records differ from a one-process run's only
where any two runs differ: timings, and the order in which rollouts finished. The merge holds
one parsed inventory however many shards there are: the others are checked by digest.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from gym_assets.errors import OutputError, UserError, reported
from gym_assets.fileio import atomic_link, atomic_writer
from gym_assets.outputs.claims import claim_dir, claimed_dir
from gym_assets.outputs.markers import CAPTURES, MARKER_NAME, ROLLOUTS_RUN
from gym_assets.outputs.targets import Target
from gym_assets.plans.model import load_plan
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl
from gym_assets.rollouts.collection.ledger import Ledger, key_of
from gym_assets.rollouts.collection.manifest import (
    Manifest,
    check_inventory,
    check_inventory_digest,
    check_rows,
    read_manifest,
)
from gym_assets.rollouts.collection.planned import Keyed, Planned, read_planned
from gym_assets.rollouts.gateway.upstream_config import UpstreamConfig
from gym_assets.rollouts.harnesses.registry import Harness, resolve
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import (
    RunResult,
    check_run_dir,
    prepare_inventory,
    publish_results,
    refuse_foreign,
    run_rollouts,
)
from gym_assets.sandbox import SandboxPolicy
from gym_assets.tasks.catalog import Catalog
from gym_assets.tasks.fingerprint import benchmark_fingerprint

_NAME = re.compile(r"(?P<index>\d+)-of-(?P<count>\d+)")
MAX_SHARDS = 1024
INVENTORY_DIR = "inventory"  # the partition's inventory, written once (prepare_inventory)


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (from 1) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_SHARDS or not 1 <= self.index <= self.count:
            raise UserError(
                f"no shard {self.index}/{self.count}: a shard is I/N with 1 <= I <= N <= "
                f"{MAX_SHARDS}"
            )

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``I/N`` as a user writes it (``--shard 2/4``)."""
        index, slash, count = text.partition("/")
        if not (slash and index.strip().isdigit() and count.strip().isdigit()):
            raise UserError(f"shard {text!r} is not I/N (for example 2/4: the second of four)")
        return cls(int(index), int(count))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def name(self) -> str:
        """The shard's directory under the shards root."""
        return f"{self.index}-of-{self.count}"

    def span(self, total: int) -> range:
        """The inventory positions this shard covers among ``total`` planned rollouts
        (``RunOptions.span``)."""
        return range((self.index - 1) * total // self.count, self.index * total // self.count)


def shards_of(count: int) -> list[Shard]:
    return [Shard(index, count) for index in range(1, count + 1)]


@dataclass(frozen=True)
class ShardRun:
    """What one shard's invocation did."""

    shard: Shard
    directory: Path
    rollouts: int  # the shard's span
    dispatched: int  # in this invocation (0: finished before, skipped)
    seconds: float
    skipped: bool
    notes: list[str]


def run_shard(
    catalog: Catalog,
    benchmark: str,
    harness: Harness,
    shards_root: Path,
    shard: Shard,
    upstream: UpstreamConfig,
    options: RunOptions,
    *,
    progress_stream: TextIO | None = None,
) -> ShardRun:
    """Run ``shard`` of the partition into ``shards_root/<I>-of-<N>`` (module docstring): fresh
    unless ``options.resume``, and then not at all when it has finished."""
    directory = Path(shards_root) / shard.name
    if options.resume:
        check_run_dir(catalog, benchmark, harness, directory, options)  # another run: refused
        unfinished = _unfinished_or_none(RunFiles(directory), shard, options.max_attempts)
        if unfinished == 0:
            span = len(shard.span(read_manifest(RunFiles(directory)).rollouts))
            note = f"shard {shard} finished before: its {span} rollouts are not run again"
            return ShardRun(shard, directory, span, 0, 0.0, True, [note])
    inventory = None
    if not (options.resume and RunFiles(directory).materialized_inputs.is_file()):  # fresh
        partition = Path(shards_root) / INVENTORY_DIR
        inventory = prepare_inventory(
            catalog, benchmark, harness, partition, options, progress_stream=progress_stream
        )
    result = run_rollouts(
        catalog,
        benchmark,
        harness,
        directory,
        upstream,
        replace(options, span=shard.span),
        progress_stream=progress_stream,
        inventory=inventory,
    )
    return ShardRun(
        shard, directory, result.rollouts, result.dispatched, result.seconds, False, result.notes
    )


def _unfinished_or_none(files: RunFiles, shard: Shard, max_attempts: int) -> int | None:
    """How many rollouts of the shard's span are still to dispatch, or None when the directory
    holds no readable run to tell (the run itself then refuses it or starts it fresh)."""
    try:
        return len(_Read.of(files, shard, whole=False).unfinished(max_attempts))
    except UserError:
        return None


@dataclass(frozen=True)
class _Read:
    """A shard's run read and checked as ``manifest.read_run`` checks a run."""

    shard: Shard
    files: RunFiles
    manifest: Manifest
    span: Sequence[Keyed]  # the shard's planned rollouts
    planned: Planned | None  # the whole run's, as its end reads it (a merge), or None

    @classmethod
    def of(cls, files: RunFiles, shard: Shard, *, whole: bool = True) -> _Read:
        """The shard in ``files`` with the whole inventory read as the end of a run reads it
        (``planned``: no input row), or (``whole=False``) its span's rows alone, as a resume
        reads them."""
        manifest = _manifest(files, shard)
        positions = shard.span(manifest.rollouts)
        if not whole:
            span = check_inventory(files, manifest, positions)
            check_rows(files, span)
            return cls(shard, files, manifest, span, None)
        check_inventory_digest(files, manifest)
        planned = read_planned(files, manifest.taskset)
        check_rows(files, planned.rollouts)
        span = planned.rollouts[positions.start : positions.stop]
        return cls(shard, files, manifest, span, planned)

    def sibling(self, files: RunFiles, shard: Shard) -> _Read:
        """Another shard of this one's run, checked as ``of`` checks one. Its manifest must be
        this one's and its inventory the bytes that manifest names, so the inventory is this
        one's byte for byte and its view is shared: a merge of N shards holds one, not N."""
        assert self.planned is not None
        manifest = _manifest(files, shard)
        if manifest != self.manifest:
            raise UserError(
                f"shard {shard} is of another run than shard {self.shard} (their manifests "
                f"differ: inventory {manifest.inventory_sha256[:12]}… vs "
                f"{self.manifest.inventory_sha256[:12]}…); run every shard of one run with the "
                "same settings, or run this one afresh",
                path=files.manifest,
            )
        check_inventory_digest(files, manifest)
        check_rows(files, self.planned.rollouts)
        positions = shard.span(manifest.rollouts)
        span = self.planned.rollouts[positions.start : positions.stop]
        return replace(self, shard=shard, files=files, span=span)

    def unfinished(self, max_attempts: int) -> list[tuple[Keyed, int]]:
        """The rollouts of the span still to dispatch (read only: nothing is repaired), in one
        pass over each log that also refuses a row outside the span: it was written by a run
        of another span (another count, or no shard at all)."""
        own = {item.key for item in self.span}
        ledger = Ledger(max_attempts=max_attempts)
        for path, keep in (
            (self.files.records, ledger.succeeded),
            (self.files.failures, ledger.failed),
        ):
            for row in read_jsonl(path):
                if (key := key_of(row)) not in own:
                    raise UserError(
                        f"holds a row for rollout {key}, which shard {self.shard} does not "
                        f"cover: it was written by a run of another span; run shard "
                        f"{self.shard} afresh",
                        path=path,
                    )
                keep(row)
        return ledger.pending(self.span)


def shard_count(shards_root: Path) -> int:
    """N of the ``<I>-of-<N>`` shard directories under ``shards_root``; refused when there are
    none, or shards of more than one count."""
    root = Path(shards_root)
    with reported(root):
        names = sorted(entry.name for entry in root.iterdir()) if root.is_dir() else []
    counts = {int(m["count"]) for name in names if (m := _NAME.fullmatch(name))}
    if not counts:
        raise UserError(
            "holds no shard (<I>-of-<N> directories); run the shards first (`gym-assets "
            "rollouts ... --shard I/N`)",
            path=root,
        )
    if len(counts) > 1:
        listed = ", ".join(str(count) for count in sorted(counts))
        raise UserError(
            f"holds shards of {len(counts)} different counts ({listed}): they split the run "
            "differently and cannot be merged; remove the shards of the count not wanted",
            path=root,
        )
    return counts.pop()


def _read_all(
    catalog: Catalog,
    benchmark: str,
    harness: Harness,
    shards_root: Path,
    max_attempts: int,
    count: int | None,
) -> list[_Read]:
    """Every shard of ``count`` (default: the count found), checked to be one run, the one
    asked, and finished."""
    count = count or shard_count(shards_root)
    first, *others = shards_of(count)
    one = _Read.of(RunFiles(Path(shards_root) / first.name), first)
    asked = {
        "benchmark": benchmark,
        "harness": harness.name,
        "plan_digest": load_plan(catalog.workspace.plan_path(benchmark)).pins_digest,
        "config_fingerprint": benchmark_fingerprint(catalog, catalog.get(benchmark)),
    }
    one.manifest.refuse_other(one.files, asked)
    shards = [one, *(one.sibling(RunFiles(Path(shards_root) / s.name), s) for s in others)]
    for read in shards:
        left = read.unfinished(max_attempts)
        if left:
            raise UserError(
                f"shard {read.shard} is unfinished: {len(left)} of its {len(read.span)} "
                f"rollouts have no outcome yet; resume it (`--shard {read.shard} --resume`) "
                "before merging",
                path=read.files.out_dir,
            )
    return shards


def merge_shards(
    catalog: Catalog,
    benchmark: str,
    harness: Harness,
    shards_root: Path,
    out_dir: Path,
    options: RunOptions | None = None,
    *,
    count: int | None = None,
) -> RunResult:
    """Merge the finished shards under ``shards_root`` into the run directory ``out_dir``
    (module docstring). ``options``: what the shards ran with (their ``max_attempts`` says
    when a rollout is done; ``allow_unsandboxed`` where the harness's version is asked).
    ``count``: the shards to merge are the N of this count (shards of other counts are left
    alone); default: the one count found there (more than one is refused)."""
    options = options or RunOptions()
    sandbox = SandboxPolicy(allow_unsandboxed=options.allow_unsandboxed)
    with sandbox:
        resolved = resolve(harness, sandbox)
    shards = _read_all(catalog, benchmark, harness, shards_root, options.max_attempts, count)
    first = shards[0]
    files = RunFiles(Path(out_dir))
    target = Target.of(files.out_dir, ROLLOUTS_RUN, catalog.workspace)
    with claimed_dir(target):
        refuse_foreign(files, target)
        files.clear()
        _copy(first.files.plan, files.plan)
        with atomic_writer(
            files.materialized_inputs,
            "wb",
            before_replace=lambda: _copy(first.files.manifest, files.manifest),
        ) as inventory:
            inventory.writelines(_lines(first.files.materialized_inputs))
        for path in ("records", "failures"):
            with atomic_writer(getattr(files, path), "wb") as merged:
                for read in shards:
                    merged.writelines(_lines(getattr(read.files, path)))
        claim_dir(Target.of(files.capture_dir, CAPTURES, catalog.workspace))
        for read in shards:
            _copy_captures(read.files.capture_dir, files.capture_dir)
        note = f"merged {len(shards)} shards from {shards_root}"
        # The model and the wall time: the shards' own results (each ran the same model).
        # Imported here: the analysis libraries are not for loading the definitions.
        from gym_assets.rollouts.analysis.results import read_result

        ran = [read_result(read.files.result) for read in shards]
        assert first.planned is not None
        result = publish_results(
            files,
            first.planned,
            first.manifest,
            catalog.workspace,
            [note],
            model=ran[0].model,
            seconds=max(r.seconds for r in ran),
        )
    return replace(result, harness=resolved.metadata())


def _manifest(files: RunFiles, shard: Shard) -> Manifest:
    """The manifest of a shard that has run in ``files``."""
    if not files.materialized_inputs.is_file():
        raise UserError(
            f"shard {shard} has not run here (no {files.materialized_inputs.name}); run it "
            f"(`gym-assets rollouts ... --shard {shard}`) before merging",
            path=files.out_dir,
        )
    return read_manifest(files)


def _lines(path: Path) -> Iterator[bytes]:
    """The complete lines of a run file (a last line a killed writer cut short is not one)."""
    if not path.is_file():
        return
    with reported(path), path.open("rb") as handle:
        for line in handle:
            if line.endswith(b"\n"):
                yield line


def _copy(source: Path, destination: Path) -> None:
    with reported(source), source.open("rb") as handle, atomic_writer(destination, "wb") as out:
        shutil.copyfileobj(handle, out)


def _copy_captures(source: Path, destination: Path) -> None:
    """A shard's captures into the run's, as second names of the same files (finished: no
    run appends to a capture of an attempt that has ended), so a merge neither doubles them
    on disk nor syncs a copy of each; a copy where the filesystem has no hard links. The
    names are per rollout, so two shards never write the same one (a clash is refused rather
    than overwritten)."""
    if not source.is_dir():
        return
    with reported(source):
        names = sorted(entry.name for entry in source.iterdir() if entry.name != MARKER_NAME)
    for name in names:
        if (destination / name).exists():
            raise OutputError(
                f"two shards wrote the capture {name}; run the shards afresh", path=destination
            )
        atomic_link(source / name, destination / name)
