"""Partition definitions shared by every area: one partition per benchmark."""

import dagster as dg

benchmark_partitions = dg.DynamicPartitionsDefinition(name="benchmark")
