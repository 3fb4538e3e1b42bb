"""Collate one benchmark into its own taskset directory: the code path the CLI and the
``collated_taskset`` asset share.

The taskset is built in a staging directory beside the destination and swapped in only when
collation succeeded, so a failed run leaves the previous taskset untouched and a successful one
leaves no stale files from earlier runs. The destination must be missing, empty or a taskset
gym-assets wrote (``gym_assets.outputs``): nothing else is ever replaced.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gym_assets.io import atomic_write_text
from gym_assets.modes import CollationMode, ValidationMode
from gym_assets.outputs.claims import claimed_dir, rebuilt_dir
from gym_assets.outputs.markers import METRICS, PREPARED, TASKSET
from gym_assets.outputs.targets import Target, is_within
from gym_assets.tasks.catalog import Benchmark, Catalog
from gym_assets.tasks.collate import collate
from gym_assets.tasks.collation_model import CollationInput, CollationReport

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
    roots, prepared = catalog.roots, benchmark.prepared_dir
    if prepared is not None and is_within(benchmark.sidecar_dir, prepared):
        return Target.of(prepared, PREPARED, roots)
    if is_within(benchmark.sidecar_dir, roots.data):
        return Target.of(benchmark.sidecar_dir, METRICS, roots)
    return None


def collate_benchmark(
    catalog: Catalog,
    name: str,
    output_dir: Path,
    *,
    validation: ValidationMode = "warn",
    overwrite_metrics_conflicts: bool = False,
    progress: Callable[[str], None] | None = None,
) -> CollationReport:
    """Collate benchmark ``name`` into ``output_dir`` (replaced as a whole on success)."""
    benchmark = catalog.get(name)
    item = collation_input(benchmark)
    output_dir = Path(output_dir)
    sidecars = sidecar_product(catalog, benchmark)
    with (
        rebuilt_dir(Target.of(output_dir, TASKSET, catalog.roots)) as staging,
        claimed_dir(sidecars) if sidecars else contextlib.nullcontext(),
    ):
        report = collate(
            catalog.loaded.data,
            [item],
            staging,
            mode=COLLATION_MODE,
            validation=validation,
            overwrite_metrics_conflicts=overwrite_metrics_conflicts,
            progress=progress,
        )
        report = _relocate(report, staging, output_dir)
        document = json.dumps(report.to_dict(), indent=2, sort_keys=True, ensure_ascii=False)
        atomic_write_text(staging / REPORT_NAME, document + "\n")
    return report
