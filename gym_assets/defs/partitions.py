"""Partition definitions shared by every area: benchmarks, harnesses, their product, and the
collation modes."""

import dagster as dg

from gym_assets.modes import COLLATION_MODES

BENCHMARK = "benchmark"
HARNESS = "harness"
"""The dynamic partition sets' names (``instance.add_dynamic_partitions`` takes the name)."""
PARTITION_TAG = "dagster/partition"
"""The tag Dagster puts on every partitioned run: the partition key it runs."""

benchmark_partitions = dg.DynamicPartitionsDefinition(name=BENCHMARK)
harness_partitions = dg.DynamicPartitionsDefinition(name=HARNESS)
rollout_partitions = dg.MultiPartitionsDefinition(
    {BENCHMARK: benchmark_partitions, HARNESS: harness_partitions}
)
collation_mode_partitions = dg.StaticPartitionsDefinition(list(COLLATION_MODES))
"""One partition per collation mode (``train_preparation``, ``example_validation``)."""
