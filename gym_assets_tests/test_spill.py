"""Bounded-memory building blocks: hash spills, external sorts and record logs, spilled early."""

from __future__ import annotations

import random
import tracemalloc
from collections import Counter

import pytest

from gym_assets import spill
from gym_assets.spill import HashSpill, RecordLog, SortedRuns

EXTREMES = [-(1 << 63), (1 << 63) - 1, 0, -1]


def hashes(count: int, seed: int = 0) -> list[int]:
    """Values over the whole signed 64-bit range, a third of them repeated."""
    rng = random.Random(seed)
    values = [rng.randrange(-(1 << 63), 1 << 63) for _ in range(count)] + EXTREMES
    return values + rng.sample(values, len(values) // 3)


@pytest.mark.parametrize("limit", [4, 1000, None])  # many writes, a few, none (all in memory)
def test_hash_spill_counts_distinct_and_repeated_hashes_exactly(tmp_path, limit) -> None:
    values = hashes(3000)
    spilled = HashSpill(tmp_path, limit=limit, repeats=True)
    for value in values:
        spilled.add(value)
    counts = Counter(values)
    assert spilled.distinct() == len(counts)
    assert spilled.repeated() == {value for value, n in counts.items() if n > 1}
    groups = [set(group) for group in spilled._groups()]
    assert set().union(*groups) == set(values)
    assert sum(len(group) for group in groups) == len(counts)  # no hash in two groups
    assert not list(tmp_path.iterdir())  # the runs' file has no name


def test_a_hash_added_on_every_row_costs_one_entry_per_write() -> None:
    spilled = HashSpill(limit=100, repeats=True)
    for _ in range(10_000):
        spilled.add(7)
    assert [len(group) for group in spilled._groups() if group] == [100]  # one per write
    assert spilled.distinct() == 1 and spilled.repeated() == {7}


def test_memory_grows_per_write_not_per_hash() -> None:
    spilled, values = HashSpill(limit=10_000), hashes(150_000, seed=5)
    tracemalloc.start()
    try:
        for value in values[:50_000]:
            spilled.add(value)
        after_50k = tracemalloc.get_traced_memory()[0]
        for value in values[50_000:]:
            spilled.add(value)
        growth = tracemalloc.get_traced_memory()[0] - after_50k
    finally:
        tracemalloc.stop()
    assert growth < 100_000  # 8 bytes a hash kept would be 800 kB; a write keeps 1 kB


def test_hashes_are_read_back_a_256th_at_a_time() -> None:
    spilled, values = HashSpill(limit=500), hashes(50_000, seed=1)
    for value in values:
        spilled.add(value)
    sizes = [len(group) for group in spilled._groups()]
    assert len(sizes) == 256 and sum(sizes) >= len(set(values))
    assert max(sizes) < 3 * len(values) / 256


def test_hash_spill_update_is_the_union(tmp_path) -> None:
    first = HashSpill(tmp_path, limit=7, repeats=True)
    second = HashSpill(tmp_path, limit=5, repeats=True)
    left, right = hashes(100, seed=2), hashes(100, seed=3)[:50] + hashes(100, seed=2)[:20]
    for value in left:
        first.add(value)
    for value in right:
        second.add(value)
    first.update(second)
    assert first.distinct() == len(set(left + right))
    counts = Counter(left + right)
    assert first.repeated() == {value for value, n in counts.items() if n > 1}
    assert second.distinct() == len(set(right))  # the other one is left as it was


@pytest.mark.parametrize("limit", [3, 10_000])
def test_sorted_runs_give_every_record_in_order(limit) -> None:
    rng = random.Random(4)
    records = [(f"id-{rng.randrange(300)}", rng.choice("ab")) for _ in range(1000)]
    runs = SortedRuns(limit=limit)
    for record in records:
        runs.add(record)
    assert list(runs) == sorted(records)
    assert list(runs) == sorted(records)  # read again


def test_sorted_runs_merge_early_beyond_the_fan_in(monkeypatch) -> None:
    monkeypatch.setattr(spill, "MAX_FAN_IN", 4)
    records = [(str(n % 97), "é✓" * (n % 3)) for n in range(500)]
    runs = SortedRuns(limit=2)
    for record in records:
        runs.add(record)
    assert len(runs._runs) < 4  # merged into one run whenever four piled up
    assert list(runs) == sorted(records)


def test_record_log_keeps_the_order_of_appends() -> None:
    log = RecordLog(limit=3)
    records = [(str(n), f"sha256:{n}") for n in range(10, 0, -1)]
    for record in records:
        log.append(record)
    assert len(log) == 10
    assert list(log) == records
    assert list(log) == records  # read again
