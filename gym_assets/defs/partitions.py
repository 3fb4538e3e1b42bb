"""Partition definitions shared by every area: benchmarks, harnesses, and their product."""

import dagster as dg

BENCHMARK = "benchmark"
HARNESS = "harness"
"""The dynamic partition sets' names (``instance.add_dynamic_partitions`` takes the name)."""

benchmark_partitions = dg.DynamicPartitionsDefinition(name=BENCHMARK)
harness_partitions = dg.DynamicPartitionsDefinition(name=HARNESS)
rollout_partitions = dg.MultiPartitionsDefinition(
    {BENCHMARK: benchmark_partitions, HARNESS: harness_partitions}
)
