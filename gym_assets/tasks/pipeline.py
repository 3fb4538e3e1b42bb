"""Collate one benchmark into its own taskset directory: the code path the CLI and the
``collated_taskset`` asset share.

The taskset is built in a staging directory beside the destination and swapped in only when
collation succeeded, so a failed run leaves the previous taskset untouched and a successful one
leaves no stale files from earlier runs.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gym_assets.io import PUBLISHED_DIR_MODE, atomic_write_text
from gym_assets.tasks.catalog import Benchmark, Catalog
from gym_assets.tasks.collate import collate
from gym_assets.tasks.collation_model import CollationInput, CollationReport

REPORT_NAME = "collation_report.json"
COLLATION_MODE = "train_preparation"


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


def _swap_in(staging: Path, final: Path) -> None:
    retired = final.with_name(f".{final.name}.retired")
    shutil.rmtree(retired, ignore_errors=True)
    if final.exists():
        final.rename(retired)
    staging.rename(final)
    shutil.rmtree(retired, ignore_errors=True)


def collate_benchmark(
    catalog: Catalog,
    name: str,
    output_dir: Path,
    *,
    validation: str = "warn",
    overwrite_metrics_conflicts: bool = False,
    progress: Callable[[str], None] | None = None,
) -> CollationReport:
    """Collate benchmark ``name`` into ``output_dir`` (replaced as a whole on success)."""
    benchmark = catalog.get(name)
    item = collation_input(benchmark)
    output_dir = Path(output_dir)
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.", dir=output_dir.parent))
    staging.chmod(PUBLISHED_DIR_MODE)  # mkdtemp is owner-only; the taskset is published as is
    try:
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
        _swap_in(staging, output_dir)
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(staging)
    return report
