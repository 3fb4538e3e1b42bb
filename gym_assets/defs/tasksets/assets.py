"""``prepared_benchmark`` and ``collated_taskset``: thin wrappers over the library."""

import json

import dagster as dg

from gym_assets.defs.metadata import as_failure, markdown_table
from gym_assets.defs.partitions import benchmark_partitions
from gym_assets.defs.resources import GymWorkspace
from gym_assets.errors import UserError
from gym_assets.modes import ValidationMode
from gym_assets.plans.canonical import short_digest
from gym_assets.tasks.fingerprint import benchmark_fingerprint
from gym_assets.tasks.pipeline import collate_benchmark
from gym_assets.tasks.prepare import prepare_benchmark

GROUP = "tasksets"
FINGERPRINT = "config_fingerprint"
"""The metadata key holding the fingerprint of the configs a taskset was collated from (what
``config_change_sensor`` compares the configs of now with)."""


@dg.asset(
    partitions_def=benchmark_partitions,
    group_name=GROUP,
    kinds={"python", "jsonl"},
    code_version="1",
    description="The benchmark's flat rows: produced by its prepare script (under "
    "`<data_root>/prepared/<benchmark>/`), or its bundled JSONL, checked line by line and left "
    "where it is.",
)
def prepared_benchmark(
    context: dg.AssetExecutionContext, workspace: GymWorkspace
) -> dg.MaterializeResult:
    try:
        benchmark = workspace.catalog().get(context.partition_key)
        result = prepare_benchmark(benchmark)
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
    deps=[prepared_benchmark],
    kinds={"python", "jsonl"},
    code_version="1",
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
        fingerprint = benchmark_fingerprint(catalog, catalog.get(name))
        report = collate_benchmark(
            catalog,
            name,
            workspace.layout.taskset_dir(name),
            validation=config.validation,
            overwrite_metrics_conflicts=config.overwrite_metrics_conflicts,
        )
    except UserError as exc:
        raise as_failure(exc) from None
    for warning in report.warnings:
        context.log.warning(warning)
    files = markdown_table(
        ["file", "rows", "sha256"],
        [
            [f"`{o.path}`", o.rows if o.rows is not None else "-", short_digest(o.sha256)]
            for o in report.outputs
        ],
    )
    collated = next(
        o for o in report.outputs if o.path.endswith(".jsonl") and "_prepare" not in o.path
    )
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(collated.path),
            "sha256": dg.MetadataValue.text(collated.sha256),
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
            "preview": dg.MetadataValue.md(_preview(report.preview)),
            FINGERPRINT: dg.MetadataValue.text(fingerprint),
        },
        data_version=dg.DataVersion(collated.sha256),
    )
