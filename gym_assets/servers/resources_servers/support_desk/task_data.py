"""Task data the support-desk verifier grades a conversation against."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class TaskData(BaseModel):
    model_config = ConfigDict(extra="allow")

    expected_resolution: str
    max_turns: int = 6
