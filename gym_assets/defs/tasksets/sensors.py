"""Re-collate a benchmark when anything that produces its taskset changes."""

import json

import dagster as dg

from gym_assets.defs.jobs import benchmark_job
from gym_assets.defs.partitions import BENCHMARK, HARNESS, benchmark_partitions
from gym_assets.defs.resources import GymWorkspace
from gym_assets.rollouts.harnesses import load_harnesses
from gym_assets.tasks.fingerprint import catalog_fingerprints


@dg.sensor(
    job=benchmark_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Hashes each benchmark's config blocks, source data and prepare code; adds a partition "
        "for every new benchmark and requests re-collation of every changed one. Adds a harness "
        "partition for every harness of the registry."
    ),
)
def config_change_sensor(
    context: dg.SensorEvaluationContext, workspace: GymWorkspace
) -> dg.SensorResult | dg.SkipReason:
    previous: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
    catalog = workspace.catalog()
    _add_harness_partitions(context.instance, list(load_harnesses(catalog.loaded)))
    current = catalog_fingerprints(catalog)
    known = set(context.instance.get_dynamic_partitions(BENCHMARK))
    new_partitions = sorted(name for name in current if name not in known)
    changed = [name for name, digest in current.items() if previous.get(name) != digest]
    if not changed and not new_partitions:
        return dg.SkipReason(f"no changes in {len(current)} benchmarks")
    requests = [
        dg.RunRequest(
            partition_key=name,
            run_key=f"{name}:{current[name]}",
            tags={"gym_assets/benchmark": name, "gym_assets/fingerprint": current[name]},
        )
        for name in changed
    ]
    partition_requests = (
        [benchmark_partitions.build_add_request(new_partitions)] if new_partitions else []
    )
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=partition_requests,
        cursor=json.dumps(current, sort_keys=True),
    )


def _add_harness_partitions(instance: dg.DagsterInstance, harnesses: list[str]) -> None:
    """Harness partitions follow the registry, not a change: added directly, so they exist
    on every tick whatever the benchmarks do (and the run requests stay the benchmarks')."""
    known = set(instance.get_dynamic_partitions(HARNESS))
    missing = [name for name in harnesses if name not in known]
    if missing:
        instance.add_dynamic_partitions(HARNESS, missing)
