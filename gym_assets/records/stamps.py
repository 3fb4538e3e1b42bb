"""The collector's stamps: the ``_ng_*`` keys every row of one attempt carries.

A success record and a failure-sidecar row of the same attempt carry the same stamps, so a
reader can join them, resume a run, and tell which planned rollout a row answers. The stamps
are built as this type and become JSON keys only in :meth:`RolloutStamps.to_row`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gym_assets.records import keys
from gym_assets.records.episode import TaskId

# keys of the input row a record carries over as they were: whose agent, which source
COPIED_ROW_KEYS = ("agent_ref", "task_source", "skills_ref")


@dataclass(frozen=True, slots=True)
class RolloutStamps:
    """Which planned rollout and attempt a row belongs to, and where it ran.

    ``copied`` holds the ``COPIED_ROW_KEYS`` the input row had (an ``agent_ref`` named by the
    run when the row had none comes last), in the order they are written.
    """

    task_index: int
    rollout_index: int
    environment_server: str
    result_type: str
    task_id: TaskId
    attempt_index: int = 0
    rollout_id: str | None = None
    copied: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of_input(
        cls,
        row: Mapping[str, Any],
        task_id: TaskId,
        *,
        attempt: int,
        result_type: str,
        agent: str | None,
    ) -> RolloutStamps:
        """The stamps of attempt ``attempt`` of the stamped input ``row``."""
        copied = {key: row[key] for key in COPIED_ROW_KEYS if key in row}
        if "agent_ref" not in copied and agent is not None:
            copied["agent_ref"] = {"name": agent}
        return cls(
            task_index=row[keys.TASK_INDEX],
            rollout_index=row[keys.ROLLOUT_INDEX],
            environment_server=row[keys.ENVIRONMENT_SERVER],
            result_type=result_type,
            task_id=task_id,
            attempt_index=attempt,
            rollout_id=row.get(keys.ROLLOUT_ID),
            copied=copied,
        )

    def to_row(self) -> dict[str, Any]:
        """The stamps as the JSON keys of a row (the attempt only after the first)."""
        row: dict[str, Any] = {
            keys.TASK_INDEX: self.task_index,
            keys.ROLLOUT_INDEX: self.rollout_index,
        }
        if self.attempt_index > 0:
            row[keys.ATTEMPT_INDEX] = self.attempt_index
        if self.rollout_id is not None:
            row[keys.ROLLOUT_ID] = self.rollout_id
        row.update(self.copied)
        row[keys.ENVIRONMENT_SERVER] = self.environment_server
        row[keys.RESULT_TYPE] = self.result_type
        row[keys.TASK_ID] = self.task_id.model_dump()
        return row
