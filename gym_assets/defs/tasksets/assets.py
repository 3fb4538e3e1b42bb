"""``prepared_benchmark``, ``collated_taskset`` and ``collated_datasets``: thin wrappers over
the library."""

import hashlib
import json
from typing import Any, cast

import dagster as dg

from gym_assets.defs.metadata import as_failure, labels, markdown_table
from gym_assets.defs.partitions import benchmark_partitions, collation_mode_partitions
from gym_assets.defs.resources import GymWorkspace
from gym_assets.errors import UserError
from gym_assets.modes import CollationMode, ValidationMode
from gym_assets.plans.canonical import short_digest
from gym_assets.tasks.collation_model import CollationReport
from gym_assets.tasks.fingerprint import CODE_VERSIONS, InputsOf
from gym_assets.tasks.pipeline import collate_benchmark, collate_datasets
from gym_assets.tasks.prepare import prepare_benchmark

GROUP = "tasksets"
FINGERPRINT = "config_fingerprint"
"""The metadata key holding the fingerprint of the configs a taskset was collated from (what
``config_change_sensor`` compares the configs of now with)."""


@dg.asset(
    partitions_def=benchmark_partitions,
    group_name=GROUP,
    **labels("datasets"),
    kinds={"python", "jsonl"},
    code_version=CODE_VERSIONS["prepared"],
    description="The benchmark's flat rows: produced by its prepare script (under "
    "`<data_root>/prepared/<benchmark>/`), or its bundled JSONL, checked line by line and left "
    "where it is.",
)
def prepared_benchmark(
    context: dg.AssetExecutionContext, workspace: GymWorkspace
) -> dg.MaterializeResult:
    try:
        catalog = workspace.catalog()
        benchmark = catalog.get(context.partition_key)
        inputs = InputsOf(catalog, benchmark).product("prepared")
        result = prepare_benchmark(benchmark, inputs=inputs)
    except UserError as exc:
        raise as_failure(exc) from None
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(result.path)),
            "rows": dg.MetadataValue.int(result.rows),
            "sha256": dg.MetadataValue.text(result.sha256),
            "ran_prepare_script": dg.MetadataValue.bool(result.ran_prepare),
        },
        data_version=dg.DataVersion(result.sha256),
    )


class CollationConfig(dg.Config):
    """How strictly to validate task data (off | warn | error | auto) and whether a changed
    metrics sidecar may be overwritten."""

    validation: ValidationMode = "warn"
    overwrite_metrics_conflicts: bool = False

    def options(self) -> dict[str, Any]:
        """The collation functions' keyword arguments."""
        return {
            "validation": self.validation,
            "overwrite_metrics_conflicts": self.overwrite_metrics_conflicts,
        }


def _preview(rows: list[dict]) -> str:
    table = []
    for row in rows:
        task_id = row.get("task_id")
        if isinstance(task_id, dict):
            ident, taskset = task_id.get("task_id"), task_id.get("taskset")
            keys = ", ".join(sorted(row.get("task_input") or {}))
        else:
            ident, taskset, keys = task_id, "(flat row)", ", ".join(sorted(row))
        table.append([ident, taskset, keys])
    return markdown_table(["task_id", "taskset", "input keys"], table)


@dg.asset(
    partitions_def=benchmark_partitions,
    group_name=GROUP,
    **labels("datasets"),
    deps=[prepared_benchmark],
    kinds={"python", "jsonl"},
    code_version=CODE_VERSIONS["taskset"],
    description="Environment-neutral tasks with stable IDs, routed to environment servers, "
    "with dataset metrics and the task-data validation report, under "
    "`<data_root>/tasksets/<benchmark>/`. Records the fingerprint of the configs it was "
    "collated from, which `config_change_sensor` compares with the configs of now.",
)
def collated_taskset(
    context: dg.AssetExecutionContext, workspace: GymWorkspace, config: CollationConfig
) -> dg.MaterializeResult:
    name = context.partition_key
    try:
        catalog = workspace.catalog()
        inputs = InputsOf(catalog, catalog.get(name))
        report = collate_benchmark(
            catalog,
            name,
            workspace.paths.taskset_dir(name),
            inputs=inputs.product("taskset"),
            **config.options(),
        )
    except UserError as exc:
        raise as_failure(exc) from None
    metadata = _report_metadata(context, report)
    collated = next(
        o for o in report.outputs if o.path.endswith(".jsonl") and "_prepare" not in o.path
    )
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(collated.path),
            "sha256": dg.MetadataValue.text(collated.sha256),
            **metadata,
            "preview": dg.MetadataValue.md(_preview(report.preview)),
            FINGERPRINT: dg.MetadataValue.text(inputs.fingerprint),
        },
        data_version=dg.DataVersion(collated.sha256),
    )


def _report_metadata(
    context: dg.AssetExecutionContext, report: CollationReport
) -> dict[str, dg.MetadataValue]:
    """What both collation assets show: counts, files, validation, warnings, metrics."""
    for warning in report.warnings:
        context.log.warning(warning)
    files = markdown_table(
        ["file", "rows", "sha256"],
        [
            [f"`{o.path}`", o.rows if o.rows is not None else "-", short_digest(o.sha256)]
            for o in report.outputs
        ],
    )
    return {
        "rows": dg.MetadataValue.int(report.rows),
        "tasks": dg.MetadataValue.int(report.tasks),
        "tasksets": dg.MetadataValue.text(", ".join(report.tasksets) or "(flat rows)"),
        "outputs": dg.MetadataValue.md(files),
        "output_digests": dg.MetadataValue.json({o.path: o.sha256 for o in report.outputs}),
        "validation": dg.MetadataValue.md(
            f"mode: `{report.validation_mode}`\n\n"
            + (
                f"```\n{report.validation_summary}\n```"
                if report.validation_summary
                else "all validated rows are clean"
            )
        ),
        "warnings": dg.MetadataValue.int(len(report.warnings)),
        "metrics": dg.MetadataValue.json(json.loads(json.dumps(report.metrics))),
    }


class DatasetsCollationConfig(CollationConfig):
    """How strictly to validate task data (off | warn | error | auto: error for
    example_validation, warn for train_preparation) and whether a changed metrics sidecar may
    be overwritten."""

    validation: ValidationMode = "auto"


@dg.asset(
    partitions_def=collation_mode_partitions,
    group_name=GROUP,
    **labels("datasets"),
    deps=[dg.AssetDep(prepared_benchmark, partition_mapping=dg.AllPartitionMapping())],
    kinds={"python", "jsonl"},
    code_version="1",
    description="Every dataset of the configs that the partition's mode takes, collated into "
    "one `{type}.jsonl` and `{type}_metrics.json` per dataset type under "
    "`<data_root>/collations/<mode>/`: `train_preparation` takes the train, validation and "
    "benchmark datasets, `example_validation` the example datasets. Benchmarks with a "
    "prepare script must be prepared first (`prepared_benchmark`).",
)
def collated_datasets(
    context: dg.AssetExecutionContext, workspace: GymWorkspace, config: DatasetsCollationConfig
) -> dg.MaterializeResult:
    mode = cast(CollationMode, context.partition_key)  # the partitions are the modes
    try:
        report = collate_datasets(
            workspace.catalog(), mode, workspace.paths.collation_dir(mode), **config.options()
        )
    except UserError as exc:
        raise as_failure(exc) from None
    per_type = [
        [f"`{dataset_type}`", metrics.get("Number of examples", 0)]
        for dataset_type, metrics in sorted(report.metrics.items())
    ]
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(workspace.paths.collation_dir(mode))),
            "datasets": dg.MetadataValue.int(len(report.datasets)),
            "types": dg.MetadataValue.md(markdown_table(["type", "examples"], per_type)),
            **_report_metadata(context, report),
        },
        data_version=dg.DataVersion(
            hashlib.sha256("".join(sorted(o.sha256 for o in report.outputs)).encode()).hexdigest()
        ),
    )
