"""Task data of the exact-match verifier (rows nest it under ``task_data``).

Extras are forbidden: a misspelt ``alias`` would otherwise silently grade against nothing.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class TaskData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expected_answer: str
    aliases: list[str] = []
