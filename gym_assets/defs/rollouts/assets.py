"""``rollouts[benchmark × harness]``: every planned task of the benchmark, run with the harness."""

from collections.abc import Sequence
from dataclasses import asdict, replace

import dagster as dg

from gym_assets.defs.executors import ROLLOUTS_POD
from gym_assets.defs.metadata import as_failure, labels, markdown_table
from gym_assets.defs.partitions import rollout_partitions
from gym_assets.defs.plans.assets import eval_plan
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.rollouts.analysis_metadata import analysis_metadata
from gym_assets.defs.rollouts.resources import HarnessRunner, ModelEndpoint
from gym_assets.errors import UserError
from gym_assets.rollouts.collection.metrics import HistogramBin
from gym_assets.rollouts.harnesses.registry import get_harness, load_harnesses
from gym_assets.rollouts.run import RunResult, run_rollouts


def dimensions(partition_key: str) -> tuple[str, str]:
    """``(benchmark, harness)`` of a rollouts partition key."""
    keys = rollout_partitions.get_partition_key_from_str(partition_key).keys_by_dimension
    return keys["benchmark"], keys["harness"]


def _histogram(bins: Sequence[HistogramBin]) -> str:
    def edge(value: float | None) -> str:
        return "" if value is None else f"{value:.1f}"

    return markdown_table(
        ["reward", "rollouts"], [[f"{edge(b.lo)}–{edge(b.hi)}", b.count] for b in bins]
    )


def run_metadata(
    result: RunResult, resumed_from: str | None, shards: int | None = None
) -> dict[str, dg.MetadataValue]:
    """The metadata of a ``rollouts`` materialization, one step or ``shards`` shards merged, so
    that both read the same: its counts, statistics, files and analysis, the shard count, and
    the failed run it continued (``resumed_from``), if any."""
    totals = result.totals
    files = result.files
    kinds, masked = totals.failure_kinds, totals.masked_kinds
    metadata: dict[str, dg.MetadataValue] = {
        "summary": dg.MetadataValue.text(totals.headline),
        "rollouts": dg.MetadataValue.int(result.rollouts),
        "passed": dg.MetadataValue.int(totals.passed),
        "dispatched": dg.MetadataValue.int(result.dispatched),
        "outcomes": dg.MetadataValue.json(asdict(totals.outcomes)),
        "failure_kinds": dg.MetadataValue.md(
            markdown_table(["failure kind", "rollouts"], sorted(kinds.items())) if kinds else "none"
        ),
        "masked_kinds": dg.MetadataValue.md(
            markdown_table(["masked as", "rollouts"], sorted(masked.items())) if masked else "none"
        ),
        "reward_histogram": dg.MetadataValue.md(_histogram(totals.reward_histogram)),
        "rollouts_per_second": dg.MetadataValue.float(round(result.rollouts_per_second, 2)),
        "records": dg.MetadataValue.path(str(files.records)),
        "failures": dg.MetadataValue.path(str(files.failures)),
        "materialized_inputs": dg.MetadataValue.path(str(files.materialized_inputs)),
        "aggregate_metrics": dg.MetadataValue.path(str(files.aggregate_metrics)),
        "harness": dg.MetadataValue.json(result.harness),
        "model": dg.MetadataValue.json(result.model.to_json()),
        "result": dg.MetadataValue.path(str(files.result)),
    }
    for name, value in (("reward_mean", totals.reward_mean), ("pass@1", totals.pass_at_1)):
        if value is not None:
            metadata[name] = dg.MetadataValue.float(value)
    metadata |= analysis_metadata(result.analysis)
    if shards is not None:
        metadata["shards"] = dg.MetadataValue.int(shards)
    if resumed_from is not None:
        metadata["resumed_from_run"] = dg.MetadataValue.text(resumed_from)
    return metadata


def failed_parent(context: dg.AssetExecutionContext) -> str | None:
    """The failed run this run re-executes (Dagster's run retry, or a re-execution of a failed
    run from the UI), or None. Such a run continues the rollouts its parent left in the ledger
    rather than starting over: the parent stopped before it finished (its worker killed, its
    step failed), what it recorded stands, and only what it did not finish is dispatched. A
    re-execution of a successful run collects anew, as any other run does."""
    parent_id = context.run.parent_run_id
    if parent_id is None:
        return None
    parent = context.instance.get_run_by_id(parent_id)
    if parent is None or parent.status != dg.DagsterRunStatus.FAILURE:
        return None
    return parent_id


@dg.asset(
    partitions_def=rollout_partitions,
    group_name="rollouts",
    **labels("evaluation"),
    # Each benchmark × harness partition reads its benchmark's plan: Dagster infers that mapping
    # (the benchmark dimension shares the plan's partitions), so none is spelled out here.
    deps=[eval_plan],
    kinds={"python", "jsonl"},
    # Shares the instance's `rollouts` pool: its limit is how many partitions collect at once.
    pool="rollouts",
    # Under the k8s executor each step is a pod, and this step runs the model gateway, the agents
    # and the sandboxed verifiers side by side: its pod asks for what that needs (the executor's
    # default is sized for the checks). A step's tag, not the job's: Dagster applies a job's
    # `dagster-k8s/config` to the run pod only. Other executors ignore it.
    op_tags={"dagster-k8s/config": ROLLOUTS_POD},
    # 2: the report and history snapshots among its outputs, and a re-execution of a failed run
    # continuing its rollouts. 3: the run's result (the model it ran) for the scoreboard.
    code_version="3",
    description="Every planned task of the benchmark run through its environment server with "
    "the harness: records, failure sidecar, materialized inputs, aggregate metrics with their "
    "statistics, and an HTML report, under `<data_root>/rollouts/<benchmark>/<harness>/`.",
)
def rollouts(
    context: dg.AssetExecutionContext,
    workspace: GymWorkspace,
    model_endpoint: ModelEndpoint,
    harness_runner: HarnessRunner,
) -> dg.MaterializeResult:
    benchmark, harness_name = dimensions(context.partition_key)
    parent = failed_parent(context)
    if parent is not None:
        context.log.info(f"re-executes failed run {parent}: continuing its rollouts (resume)")
    try:
        options = harness_runner.options(model_endpoint.script())
        if parent is not None:
            options = replace(options, resume=True)
        catalog = workspace.catalog()
        harness = get_harness(load_harnesses(catalog.loaded), harness_name)
        result = run_rollouts(
            catalog,
            benchmark,
            harness,
            workspace.paths.rollouts_run_dir(benchmark, harness_name),
            model_endpoint.upstream_config(),
            options,
        )
    except UserError as exc:
        raise as_failure(exc) from None
    for note in result.notes:
        context.log.info(note)
    return dg.MaterializeResult(metadata=run_metadata(result, parent))
