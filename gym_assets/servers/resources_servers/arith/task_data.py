"""Task data of the arithmetic verifier (flat tool-use rows)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class TaskData(BaseModel):
    model_config = ConfigDict(extra="allow")

    expected_answer: str
