"""Task input of the two-agent conversation server (no ``responses_create_params``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class TaskData(BaseModel):
    model_config = ConfigDict(extra="allow")

    scenario: str
    user_profile: dict[str, str]
    opening_message: str
