"""Task data of the HumanEval verifier: it reads the problem only from ``verifier_metadata``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

_FROM_VERIFIER_METADATA: JsonDict = {"legacy_location": "verifier_metadata"}


class TaskData(BaseModel):
    model_config = ConfigDict(extra="allow")

    prompt: str = Field(json_schema_extra=_FROM_VERIFIER_METADATA)
    entry_point: str = Field(json_schema_extra=_FROM_VERIFIER_METADATA)
    test: str = Field(json_schema_extra=_FROM_VERIFIER_METADATA)
    canonical_solution: str = Field(json_schema_extra=_FROM_VERIFIER_METADATA)
