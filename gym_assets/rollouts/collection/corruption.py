"""Seeded wrong answers for offline runs, so a reference run still exercises the verifier.

Exactly ``round(fraction × rollouts)`` rollouts are corrupted, chosen by ranking each rollout's
``sha256(seed:task:rollout)``: the choice depends only on the seed and the inventory, never on
completion order or on which rollouts a resume still has to run.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable, Sequence

from gym_assets.records.contracts import Step
from gym_assets.rollouts.collection.ledger import Key

WRONG_ANSWER = "I am not sure; here is my best guess: 42."


def corrupted_keys(
    keys: Iterable[Key], fraction: float, seed: int, *, total: int | None = None
) -> frozenset[Key]:
    """The rollouts to corrupt among ``keys``; ``total``: how many keys there are, when the
    caller knows (the keys are then streamed, holding only the chosen ones: a shard streams
    the keys of the partition it holds only a span of)."""
    if total is None:
        keys = list(keys)
        total = len(keys)
    count = round(fraction * total)
    if count <= 0:
        return frozenset()

    def rank(key: Key) -> bytes:
        return hashlib.sha256(f"{seed}:{key[0]}:{key[1]}".encode()).digest()

    return frozenset(heapq.nsmallest(count, keys, key=rank))


def corrupt(steps: Sequence[Step]) -> list[Step]:
    """The script with its final text step replaced by a wrong answer (or one appended)."""
    corrupted: list[Step] = [dict(step) for step in steps]
    for index in range(len(corrupted) - 1, -1, -1):
        if "text" in corrupted[index]:
            corrupted[index] = {**corrupted[index], "text": WRONG_ANSWER}
            return corrupted
    return [*corrupted, {"text": WRONG_ANSWER}]
