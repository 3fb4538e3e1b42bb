"""``harness_conformance[harness]`` runs the suite for one harness; ``conformance_matrix`` puts
every harness's latest run side by side."""

import dagster as dg

from gym_assets.defs.metadata import as_failure, labels, markdown_table, page_link
from gym_assets.defs.partitions import harness_partitions
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.rollouts.resources import HarnessRunner
from gym_assets.errors import UserError
from gym_assets.rollouts.harnesses.install import unavailable_reason
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.suite.harness_runs import (
    MATRIX_HTML,
    publish_matrix,
    run_in_new_dir,
    scenario_rows,
)
from gym_assets.suite.run import SuiteSummary

GROUP = "conformance"

AFTER_ANY_HARNESS_RUN = (
    dg.AutomationCondition.eager()
    .without(~dg.AutomationCondition.any_deps_missing())
    .with_label("after any harness run")
)
"""``eager()`` but for its wait on missing dependencies: a harness partition never run (a CLI
not installed here, a harness just added) must not hold the matrix back, which then lists it as
not run. The waits on runs in progress stay, so a sweep's runs render the matrix once."""


class ConformanceConfig(dg.Config):
    """The scenarios to run, by name (unset: the whole suite, as the nightly sweep runs it)."""

    scenarios: list[str] | None = None


def _metadata(summary: SuiteSummary, harness: str) -> dict[str, dg.MetadataValue]:
    result = summary.harnesses[harness]
    entry = result.to_json()
    evidence = [[label, c.required, c.observed, c.passed] for label, c in result.evidence.items()]
    metadata: dict[str, dg.MetadataValue] = {
        "verdict": dg.MetadataValue.text(entry["verdict"]),
        "exit_code": dg.MetadataValue.int(summary.exit_code),
        "scenarios": dg.MetadataValue.md(
            markdown_table(
                ["scenario", "verdict", "process", "failing checks"], scenario_rows(entry)
            )
        ),
        "evidence": dg.MetadataValue.md(
            markdown_table(["evidence", "required", "observed", "passed"], evidence)
        ),
        "report": dg.MetadataValue.md(summary.report_md.read_text("utf-8")),
        "report_html": page_link(summary.report_html),
        "summary": dg.MetadataValue.path(str(summary.summary_path)),
    }
    if result.unavailable is not None:  # a cli harness not installed: it ran no scenario
        metadata["unavailable"] = dg.MetadataValue.text(result.unavailable)
    if result.unusable is not None:  # its program cannot say its version: it ran no scenario
        metadata["unusable"] = dg.MetadataValue.text(result.unusable)
    return metadata


@dg.asset(
    partitions_def=harness_partitions,
    group_name=GROUP,
    **labels("conformance"),
    kinds={"python", "json"},
    code_version="1",
    description="The scripted conformance suite (harness-p0-probes/v1) for one harness: episode "
    "directories, scenario results and reports under "
    "`<data_root>/conformance/harnesses/<harness>/<run id>/`.",
)
def harness_conformance(
    context: dg.AssetExecutionContext,
    config: ConformanceConfig,
    workspace: GymWorkspace,
    harness_runner: HarnessRunner,
) -> dg.MaterializeResult:
    harness = context.partition_key
    try:
        catalog = workspace.catalog()
        summary = run_in_new_dir(
            catalog.workspace.conformance_runs_dir(harness),
            catalog.workspace,
            context.run_id,
            lambda output: harness_runner.run_conformance(
                catalog.loaded,
                harness=harness,
                scenarios=config.scenarios,
                output=output,
                progress=context.log.info,
                configs=str(catalog.workspace.configs),
            ),
        )
    except UserError as exc:
        raise as_failure(exc) from None
    return dg.MaterializeResult(metadata=_metadata(summary, harness))


@dg.asset(
    group_name=GROUP,
    **labels("conformance"),
    deps=[harness_conformance],
    kinds={"python", "html"},
    code_version="1",
    automation_condition=AFTER_ANY_HARNESS_RUN,
    description="Every registered harness's latest conformance run in one report (markdown, "
    "HTML, JSON) under `<data_root>/conformance/matrix/`; re-rendered after any harness run, "
    "once no harness run is still queued or running. A harness never run shows as not run.",
)
def conformance_matrix(workspace: GymWorkspace) -> dg.MaterializeResult:
    try:
        catalog = workspace.catalog()
        harnesses = load_harnesses(catalog.loaded)
        matrix = publish_matrix(
            {name: catalog.workspace.conformance_runs_dir(name) for name in harnesses},
            catalog.workspace.conformance_matrix_dir(),
            catalog.workspace,
            unavailable={
                name: reason
                for name, harness in harnesses.items()
                if (reason := unavailable_reason(harness)) is not None
            },
        )
    except UserError as exc:
        raise as_failure(exc) from None
    rows = []
    for name, entry in matrix.document["harnesses"].items():
        verdicts = list(entry["scenarios"].values())
        rows.append([name, entry["verdict"], f"{verdicts.count('fulfilled')}/{len(verdicts)}"])
    return dg.MaterializeResult(
        metadata={
            "verdict": dg.MetadataValue.text(matrix.document["verdict"]),
            "harnesses": dg.MetadataValue.md(
                markdown_table(["harness", "P0", "scenarios fulfilled"], rows)
            ),
            "matrix": dg.MetadataValue.md(matrix.markdown),
            "matrix_html": page_link(matrix.directory / MATRIX_HTML),
        }
    )
