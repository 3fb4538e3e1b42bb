"""Re-collate a benchmark when anything that produces its taskset changes.

The reference point is what was built, not what the sensor saw last: each ``collated_taskset``
materialization records the fingerprint of the configs it was collated from, and a tick compares
each benchmark's fingerprint now with that one. So runs made by ``make demo``, from the UI or by
a schedule count as much as the sensor's own, and a fresh daemon requests nothing that is
already up to date.

A request's run key names the change (built from → wanted) and the stored metrics sidecar the
run will compare the new metrics with. The daemon runs a key once, so a partition whose run
failed is requested again only when something it is built from changes: a config edit, or the
sidecar the metrics conflict asked the user to replace.
"""

import dagster as dg

from gym_assets.defs.jobs import benchmark_job
from gym_assets.defs.partitions import BENCHMARK, HARNESS, PARTITION_TAG, benchmark_partitions
from gym_assets.defs.resources import GymWorkspace
from gym_assets.defs.tasksets.assets import FINGERPRINT, collated_taskset
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.tasks.fingerprint import catalog_fingerprints, sidecar_digests

IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


@dg.sensor(
    job=benchmark_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Fingerprints each benchmark's config blocks, route, source data or prepare script, "
        "prompt template and collation code version, and compares them with the fingerprint "
        "recorded on the partition's latest `collated_taskset` materialization. Requests a "
        "`benchmark_job` run for each benchmark that changed or was never collated, once per "
        "change and stored metrics sidecar (a failed run is retried when either changes, e.g. "
        "after a metrics conflict is resolved); adds a partition for each new benchmark; "
        "reports a benchmark removed from the configs (its partition and history are kept) and "
        "requests nothing for it. Adds a harness partition for each harness of the registry."
    ),
)
def config_change_sensor(
    context: dg.SensorEvaluationContext, workspace: GymWorkspace
) -> dg.SensorResult | dg.SkipReason:
    instance = context.instance
    catalog = workspace.catalog()
    _add_harness_partitions(instance, list(load_harnesses(catalog.loaded)))
    current = catalog_fingerprints(catalog)
    sidecars = sidecar_digests(catalog)
    known = instance.get_dynamic_partitions(BENCHMARK)
    new_partitions = sorted(set(current) - set(known))
    removed = sorted(set(known) - set(current))
    recorded = {name: _recorded_fingerprint(instance, name) for name in current if name in known}
    changed = [name for name, digest in current.items() if recorded.get(name) != digest]
    # A partition with a run queued or in progress is judged once that run has recorded what it
    # built from (the next tick): a sensor never queues a second run behind one already there.
    busy = _partitions_in_flight(instance) & set(changed)
    stale = [name for name in changed if name not in busy]
    if removed:
        context.log.warning(_removed_message(removed))
    if not stale:
        notes = [
            f"{len(current) - len(changed)} of {len(current)} benchmarks are collated "
            "from their configs"
        ]
        if busy:
            notes.append(f"runs queued or in progress for {', '.join(sorted(busy))}")
        if removed:
            notes.append(_removed_message(removed))
        return dg.SkipReason("; ".join(notes))
    requests = [
        dg.RunRequest(
            partition_key=name,
            # The pair (built from, wanted) keys the run: a change requests once however many
            # ticks pass before its run finishes, and reverting an edit is a new change. The
            # sidecar's digest makes a new attempt of a run that failed on a metrics conflict
            # once the user has replaced the sidecar.
            run_key=f"{name}:{recorded.get(name) or 'none'}->{current[name]}:{sidecars[name]}",
            tags={"gym_assets/benchmark": name, "gym_assets/fingerprint": current[name]},
        )
        for name in stale
    ]
    partition_requests = (
        [benchmark_partitions.build_add_request(new_partitions)] if new_partitions else []
    )
    return dg.SensorResult(run_requests=requests, dynamic_partitions_requests=partition_requests)


def _recorded_fingerprint(instance: dg.DagsterInstance, benchmark: str) -> str | None:
    """The fingerprint on the partition's latest collation, or None if it was never collated."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=collated_taskset.key, asset_partitions=[benchmark]), limit=1
    ).records
    materialization = records[0].asset_materialization if records else None
    value = materialization.metadata.get(FINGERPRINT) if materialization else None
    return str(value.value) if value is not None else None


def _partitions_in_flight(instance: dg.DagsterInstance) -> set[str]:
    records = instance.get_run_records(dg.RunsFilter(statuses=IN_FLIGHT))
    return {r.dagster_run.tags.get(PARTITION_TAG, "") for r in records} - {""}


def _removed_message(removed: list[str]) -> str:
    names = ", ".join(removed)
    return (
        f"no longer in the configs: {names} (partitions and history kept, nothing requested; "
        "delete a partition in the UI once its history is not needed)"
    )


def _add_harness_partitions(instance: dg.DagsterInstance, harnesses: list[str]) -> None:
    """Harness partitions follow the registry, not a change: added directly, so they exist
    on every tick whatever the benchmarks do (and the run requests stay the benchmarks')."""
    known = set(instance.get_dynamic_partitions(HARNESS))
    missing = [name for name in harnesses if name not in known]
    if missing:
        instance.add_dynamic_partitions(HARNESS, missing)
