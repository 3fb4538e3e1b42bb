"""Partition definitions shared by every area: benchmarks, harnesses, and their product."""

import dagster as dg

benchmark_partitions = dg.DynamicPartitionsDefinition(name="benchmark")
harness_partitions = dg.DynamicPartitionsDefinition(name="harness")
rollout_partitions = dg.MultiPartitionsDefinition(
    {"benchmark": benchmark_partitions, "harness": harness_partitions}
)
