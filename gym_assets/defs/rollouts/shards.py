"""The ``rollouts`` asset as the deployment lays it out: one step, or shards on several workers.

``GYM_ASSETS_ROLLOUT_SHARDS`` (read where the code location loads, as the executor choice is, so
the daemon, the run and every worker build the same graph) is how many shards each
benchmark × harness partition is split into:

- 1 (default): the one-step asset of ``assets.py``;
- N > 1: a graph-backed asset with the same key, partitions, checks and metadata whose steps
  are N shard ops (each the ``rollouts`` pool's, each a Celery task or a pod of its own under
  those executors) and a merge op that makes the run's products from the finished shards
  (``gym_assets.rollouts.shards``). The steps hand each other nothing (each shard writes under
  the data root, the merge reads it there), so no IO manager is involved.

The count is fixed when the code loads because it is the graph's shape. A re-execution of a
failed run re-runs only the shards that did not succeed, and each continues its own ledger.
"""

from dataclasses import replace

import dagster as dg

from gym_assets.defs.executors import ROLLOUTS_POD, SHARDS_VARIABLE, shard_count
from gym_assets.defs.metadata import as_failure, labels
from gym_assets.defs.partitions import rollout_partitions
from gym_assets.defs.plans.assets import eval_plan
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.rollouts import assets
from gym_assets.defs.rollouts.resources import HarnessRunner, ModelEndpoint
from gym_assets.errors import UserError
from gym_assets.rollouts.harnesses.registry import Harness, get_harness, load_harnesses
from gym_assets.rollouts.shards import Shard, merge_shards, run_shard, shards_of


def _partition(context: dg.AssetExecutionContext, workspace: GymWorkspace) -> tuple[str, Harness]:
    benchmark, harness_name = assets.dimensions(context.partition_key)
    return benchmark, get_harness(load_harnesses(workspace.catalog().loaded), harness_name)


def _shard_op(shard: Shard) -> dg.OpDefinition:
    @dg.op(
        name=f"shard_{shard.index}_of_{shard.count}",
        ins={"plan": dg.In(dg.Nothing)},
        out=dg.Out(dg.Nothing),
        # One slot of the `rollouts` pool per shard: the pool bounds the shards collecting at
        # once across all runs, as it bounds one-step partitions.
        pool="rollouts",
        tags={"dagster-k8s/config": ROLLOUTS_POD},
        description=f"Shard {shard} of the partition's planned rollouts, into "
        f"`<data_root>/rollout_shards/<benchmark>/<harness>/{shard.name}/`.",
    )
    def collect_shard(
        context: dg.AssetExecutionContext,
        workspace: GymWorkspace,
        model_endpoint: ModelEndpoint,
        harness_runner: HarnessRunner,
    ) -> None:
        parent = assets.failed_parent(context)
        try:
            benchmark, harness = _partition(context, workspace)
            options = harness_runner.options(model_endpoint.script())
            if parent is not None:  # a re-execution of a failed run continues its shards
                options = replace(options, resume=True)
            run = run_shard(
                workspace.catalog(),
                benchmark,
                harness,
                workspace.paths.rollout_shards_dir(benchmark, harness.name),
                shard,
                model_endpoint.upstream_config(),
                options,
            )
        except UserError as exc:
            raise as_failure(exc) from None
        for note in run.notes:
            context.log.info(note)
        context.add_output_metadata(
            {
                "rollouts": dg.MetadataValue.int(run.rollouts),
                "dispatched": dg.MetadataValue.int(run.dispatched),
                "seconds": dg.MetadataValue.float(round(run.seconds, 3)),
                "skipped": dg.MetadataValue.bool(run.skipped),
                "directory": dg.MetadataValue.path(str(run.directory)),
            }
        )

    return collect_shard


def _dispatched_by_shards(context: dg.AssetExecutionContext) -> tuple[int, float]:
    """What this run's shard steps dispatched, and the longest of their collections (they ran
    side by side): read from their output metadata, which every worker recorded in the
    instance."""
    dispatched, seconds = 0, 0.0
    for entry in context.instance.all_logs(context.run_id, of_type=dg.DagsterEventType.STEP_OUTPUT):
        event = entry.dagster_event
        if event is None or not (event.step_key or "").startswith("rollouts.shard_"):
            continue
        metadata = event.step_output_data.metadata
        count, took = metadata["dispatched"], metadata["seconds"]
        if isinstance(count, dg.IntMetadataValue) and isinstance(took, dg.FloatMetadataValue):
            dispatched += count.value or 0
            seconds = max(seconds, took.value or 0.0)
    return dispatched, seconds


def _merge_op(count: int) -> dg.OpDefinition:
    @dg.op(
        name="merge_rollout_shards",
        ins={"shards": dg.In(dg.Nothing)},
        out=dg.Out(dg.Nothing),
        description=f"Merge the partition's {count} finished shards into its run directory "
        "(refusing a missing, unfinished or foreign shard), with the metadata of a one-step run.",
    )
    def merge_rollout_shards(
        context: dg.AssetExecutionContext, workspace: GymWorkspace, harness_runner: HarnessRunner
    ) -> dg.Output[None]:
        parent = assets.failed_parent(context)
        try:
            benchmark, harness = _partition(context, workspace)
            result = merge_shards(
                workspace.catalog(),
                benchmark,
                harness,
                workspace.paths.rollout_shards_dir(benchmark, harness.name),
                workspace.paths.rollouts_run_dir(benchmark, harness.name),
                harness_runner.options(None),
                count=count,
            )
        except UserError as exc:
            raise as_failure(exc) from None
        for note in result.notes:
            context.log.info(note)
        dispatched, seconds = _dispatched_by_shards(context)
        merged = replace(result, dispatched=dispatched, seconds=seconds)
        return dg.Output(None, metadata=assets.run_metadata(merged, parent, shards=count))

    return merge_rollout_shards


def sharded_rollouts(count: int) -> dg.AssetsDefinition:
    """``rollouts`` as ``count`` shard steps and their merge."""
    shard_ops = [_shard_op(shard) for shard in shards_of(count)]
    merge = _merge_op(count)

    @dg.graph_asset(
        name="rollouts",
        partitions_def=rollout_partitions,
        group_name="rollouts",
        ins={"plan": dg.AssetIn(eval_plan.key, dagster_type=dg.Nothing)},
        kinds={"python", "jsonl"},
        code_version=assets.rollouts.code_versions_by_key[assets.rollouts.key],
        **labels("evaluation"),
        description=f"{assets.rollouts.descriptions_by_key[assets.rollouts.key]} Collected as "
        f"{count} shards on as many workers, then merged (`{SHARDS_VARIABLE}`).",
    )
    def rollouts(plan: None) -> None:
        shards = [collect(plan=plan) for collect in shard_ops]
        return merge(shards=shards)

    return rollouts


rollouts = assets.rollouts if shard_count() == 1 else sharded_rollouts(shard_count())
