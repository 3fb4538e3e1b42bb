"""Partition definitions shared by every area: benchmarks, harnesses, and their product."""

import dagster as dg

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
