"""Unique ids for calls, responses and captured exchanges, without a syscall each.

``uuid4`` reads the OS random source on every call, which costs more than the rest of a
scripted answer; a random per-process prefix plus a counter is as unique for our purposes.
"""

from __future__ import annotations

import itertools
import uuid

_PROCESS = uuid.uuid4().hex[:12]
_COUNTER = itertools.count()


def new_id(prefix: str) -> str:
    return f"{prefix}_{_PROCESS}{next(_COUNTER):012x}"
