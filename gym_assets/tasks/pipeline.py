"""Collate into a directory of its own: one benchmark into its taskset directory (the CLI's
``collate --benchmark`` and the ``collated_taskset`` asset), or every in-scope dataset of a
config into one collation directory (``collate --mode`` and the ``collated_datasets`` asset).

The output is built in a staging directory beside the destination and swapped in only when
collation succeeded, so a failed run leaves the previous output untouched and a successful one
leaves no stale files from earlier runs. The destination must be missing, empty or an output
of the same kind gym-assets wrote (``gym_assets.outputs``): nothing else is ever replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gym_assets.config.model import iter_declared_datasets
from gym_assets.errors import UserError
from gym_assets.fileio import atomic_write_text
from gym_assets.modes import CollationMode, ValidationMode
from gym_assets.outputs.claims import claimed_dir, rebuilt_dir, renewed_dir
from gym_assets.outputs.markers import (
    COLLATION,
    METRICS,
    METRICS_CONFLICTS,
    PREPARED,
    TASKSET,
    Kind,
)
from gym_assets.outputs.targets import Target, is_within
from gym_assets.tasks.catalog import Benchmark, Catalog
from gym_assets.tasks.collate import collate, in_scope_types
from gym_assets.tasks.collation_model import CollationInput, CollationReport
from gym_assets.tasks.fingerprint import Inputs, record_inputs

REPORT_NAME = "collation_report.json"
COLLATION_MODE: CollationMode = "train_preparation"


def collated_path(taskset_dir: Path, benchmark: Benchmark) -> Path:
    """The collated JSONL of a benchmark inside its taskset directory."""
    return taskset_dir / f"{benchmark.dataset.type}.jsonl"


def collation_input(benchmark: Benchmark) -> CollationInput:
    return CollationInput(
        declared=benchmark.declared,
        source_path=benchmark.require_rows(),
        prompt_config_path=benchmark.prompt_config_path,
        sidecar_dir=benchmark.sidecar_dir,
    )


def _relocate(report: CollationReport, staging: Path, final: Path) -> CollationReport:
    """Point the report's output paths at the final directory instead of the staging one."""
    prefix, target = str(staging), str(final)
    outputs = [
        replace(o, path=target + o.path[len(prefix) :]) if o.path.startswith(prefix) else o
        for o in report.outputs
    ]
    for summary in report.datasets:
        if summary.prepared.startswith(prefix):
            summary.prepared = target + summary.prepared[len(prefix) :]
    return replace(report, outputs=outputs)


def sidecar_product(catalog: Catalog, benchmark: Benchmark) -> Target | None:
    """The product that receives the dataset's metrics sidecar, if the sidecar is a product.

    A sidecar beside a dataset in the configs tree stays there (where the reference keeps it);
    one beside prepared rows lives in their prepared product; any other goes under the data
    root's ``metrics/<benchmark>/`` (see ``Catalog``), never beside a file outside both roots.
    """
    workspace, prepared = catalog.workspace, benchmark.prepared_dir
    if prepared is not None and is_within(benchmark.sidecar_dir, prepared):
        return Target.of(prepared, PREPARED, workspace)
    if is_within(benchmark.sidecar_dir, workspace.data):
        return Target.of(benchmark.sidecar_dir, METRICS, workspace)
    return None


def collate_benchmark(
    catalog: Catalog,
    name: str,
    output_dir: Path,
    *,
    validation: ValidationMode = "warn",
    overwrite_metrics_conflicts: bool = False,
    progress: Callable[[str], None] | None = None,
    inputs: Inputs | None = None,
) -> CollationReport:
    """Collate benchmark ``name`` into ``output_dir`` (replaced as a whole on success), which
    records ``inputs`` (``InputsOf(...).product("taskset")``), what it was collated from."""
    benchmark = catalog.get(name)
    sidecars = sidecar_product(catalog, benchmark)
    return _collate_into(
        catalog,
        [collation_input(benchmark)],
        Path(output_dir),
        TASKSET,
        [sidecars] if sidecars else [],
        conflicts_dir=catalog.workspace.conflicts_dir("tasksets", name),
        mode=COLLATION_MODE,
        validation=validation,
        overwrite_metrics_conflicts=overwrite_metrics_conflicts,
        progress=progress,
        inputs=inputs,
    )


def dataset_inputs(
    catalog: Catalog, mode: CollationMode
) -> list[tuple[CollationInput, Target | None]]:
    """Every dataset of the catalogue's config that ``mode`` collates, in config order, with
    the product its metrics sidecar goes into (None: beside its rows in the configs tree).

    A benchmark's rows are found as the catalogue finds them (prepared rows under the data
    root); any other dataset's ``jsonl_fpath`` is relative to the file that declares it, and its
    sidecar goes beside it when it lies in the config's tree (``Catalog.in_config_tree``).
    """
    types = in_scope_types(mode)
    loaded, workspace = catalog.loaded, catalog.workspace
    found: list[tuple[CollationInput, Target | None]] = []
    for declared in iter_declared_datasets(loaded.data):
        dataset = declared.dataset
        if dataset.type not in types:
            continue
        if dataset.type == "benchmark":
            benchmark = catalog.get(dataset.name)
            found.append((collation_input(benchmark), sidecar_product(catalog, benchmark)))
            continue
        instance = declared.instance.name
        rows = loaded.resolve_path(instance, dataset.jsonl_fpath)
        prompt = dataset.prompt_config  # collation refuses it: prompts are for benchmarks
        item = CollationInput(
            declared=declared,
            source_path=rows,
            prompt_config_path=loaded.resolve_path(instance, prompt) if prompt else None,
        )
        if catalog.in_config_tree(instance, rows):
            found.append((item, None))
            continue
        sidecars = workspace.metrics_dir_of(instance, dataset.name)
        item = replace(item, sidecar_dir=sidecars)
        found.append((item, Target.of(sidecars, METRICS, workspace)))
    return found


def collate_datasets(
    catalog: Catalog,
    mode: CollationMode,
    output_dir: Path,
    *,
    validation: ValidationMode = "auto",
    overwrite_metrics_conflicts: bool = False,
    progress: Callable[[str], None] | None = None,
) -> CollationReport:
    """Collate every dataset ``mode`` takes into ``output_dir``: ``{type}.jsonl`` and
    ``{type}_metrics.json`` per in-scope type (replaced as a whole on success)."""
    found = dataset_inputs(catalog, mode)
    if not found:
        types = ", ".join(in_scope_types(mode))
        raise UserError(
            f"the config declares no dataset that {mode} collates (types: {types}); declare "
            "one, or pick the other mode"
        )
    sidecars = list({t.path: t for _, t in found if t is not None}.values())
    return _collate_into(
        catalog,
        [item for item, _ in found],
        Path(output_dir),
        COLLATION,
        sidecars,
        conflicts_dir=catalog.workspace.conflicts_dir("collations", mode),
        mode=mode,
        validation=validation,
        overwrite_metrics_conflicts=overwrite_metrics_conflicts,
        progress=progress,
    )


class _Claimed:
    """A renewed directory (``renewed_dir``), claimed inside ``stack`` when first asked for."""

    def __init__(self, target: Target, stack: contextlib.ExitStack):
        self._target, self._stack = target, stack
        self._path: Path | None = None

    def __call__(self) -> Path:
        if self._path is None:
            self._path = self._stack.enter_context(renewed_dir(self._target))
        return self._path


def _collate_into(
    catalog: Catalog,
    items: list[CollationInput],
    output_dir: Path,
    kind: Kind,
    sidecars: list[Target],
    *,
    conflicts_dir: Path,
    mode: CollationMode,
    validation: ValidationMode,
    overwrite_metrics_conflicts: bool,
    progress: Callable[[str], None] | None,
    inputs: Inputs | None = None,
) -> CollationReport:
    """Collate ``items`` into a staging copy of ``output_dir`` (with the sidecar products held),
    write the report (and the record of ``inputs``) beside the files, and swap it in. Reported
    paths start with ``output_dir`` as given. ``conflicts_dir`` holds the conflicting metrics
    of the latest collation that got as far as comparing them: it is claimed (and emptied) at
    this run's first conflict, removed after a run without any, and never made for nothing."""
    workspace = catalog.workspace
    with (
        rebuilt_dir(Target.of(output_dir, kind, workspace)) as staging,
        contextlib.ExitStack() as held,
    ):
        for sidecar in sidecars:
            held.enter_context(claimed_dir(sidecar))
        conflicts = _Claimed(Target.of(conflicts_dir, METRICS_CONFLICTS, workspace), held)
        report = collate(
            catalog.loaded.data,
            items,
            staging,
            conflicts_dir=conflicts,
            mode=mode,
            validation=validation,
            overwrite_metrics_conflicts=overwrite_metrics_conflicts,
            progress=progress,
        )
        if os.path.lexists(conflicts_dir):
            conflicts()  # no conflict now: the earlier collation's are emptied out, and it goes
        report = _relocate(report, staging, output_dir)
        document = json.dumps(report.to_dict(), indent=2, sort_keys=True, ensure_ascii=False)
        atomic_write_text(staging / REPORT_NAME, document + "\n")
        if inputs is not None:
            record_inputs(staging, inputs)
    return report
