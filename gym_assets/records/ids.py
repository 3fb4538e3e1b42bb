"""The rollout-id rule, written once.

A rollout's id is its explicit ``_ng_rollout_id`` when the row has one, else
``<task index>-<rollout index>``; attempt ``n > 0`` of it is captured and addressed as
``<id>-a<n>``. The id is a URL path segment of the gateway and the stem of the capture file,
so an id that does not match the pattern is refused rather than repaired.
"""

from __future__ import annotations

import re

ROLLOUT_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
ATTEMPT_SUFFIX = re.compile(r"-a\d+$")
ROLLOUT_ID_HINT = "choose an id made of letters, digits, '.', '_' and '-'"


def is_rollout_id(text: str) -> bool:
    return ROLLOUT_ID_PATTERN.match(text) is not None


def base_rollout_id(task_index: object, rollout_index: object, explicit: str | None = None) -> str:
    """The id of a rollout over all its attempts: the explicit id, else ``<task>-<rollout>``."""
    return f"{task_index}-{rollout_index}" if explicit is None else explicit


def attempt_key(rollout_id: str, attempt: int) -> str:
    """What one attempt's model traffic is captured under: the id, then ``-a<n>`` after the
    first attempt."""
    return f"{rollout_id}-a{attempt}" if attempt > 0 else rollout_id


def make_rollout_id(
    task_index: int,
    rollout_index: int,
    attempt_index: int = 0,
    explicit: str | None = None,
) -> str:
    """The id one attempt of a rollout is known by (see the module's rule); an explicit id
    is validated, never sanitised."""
    if explicit is not None and not is_rollout_id(explicit):
        raise ValueError(
            f"explicit rollout id must match {ROLLOUT_ID_PATTERN.pattern}; {ROLLOUT_ID_HINT}"
        )
    return attempt_key(base_rollout_id(task_index, rollout_index, explicit), attempt_index)
