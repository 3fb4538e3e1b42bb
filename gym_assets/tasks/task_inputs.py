"""Typed task inputs: the task identity and the single-agent-turn protocol's ``task_input``.

Collation writes ``task_input`` with the source row's fields exactly as they were (flat). The
single-agent-turn environment reads them as ``task_data``; the normalization here is what makes
the flat and the nested shape mean the same thing, so collated rows need no rewriting.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from gym_assets.json_shapes import is_mapping


class TaskId(BaseModel):
    """The identity of one task: unique within a run by ``(taskset, task_id)``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    taskset: str = Field(min_length=1)
    task_id: str = Field(min_length=1)


class ResponsesCreateParams(BaseModel):
    """The Responses-API request a task carries; keys we do not model pass through unchanged.

    Only what the framework reads is typed: ``input`` (a prompt string or a list of input items),
    ``tools``, ``temperature``, and ``stream`` (tasks run non-streaming).
    """

    model_config = ConfigDict(extra="allow")

    input: str | list[Any] | None = None
    tools: list[Any] | None = None
    temperature: float | None = None
    stream: Literal[False] | None = None


_REQUEST = TypeAdapter(ResponsesCreateParams)


def request_is_valid(params: object) -> bool:
    """Whether ``params``, a parsed JSON value, validates as ``ResponsesCreateParams``.

    Collation asks once per row and hands the answer to both places that need it (the row's
    metrics and the single-agent schema, which checks nothing else).
    """
    # Only a JSON object can be a request; pydantic's yes/no answer builds no error to discard.
    return type(params) is dict and _REQUEST.validator.isinstance_python(params)


class SingleAgentTaskData(BaseModel):
    """Task-data schema of the single-agent environment servers: they read only the request.

    Every other field is forwarded to the resources server as ``task_data``, so extras are
    allowed here; the resources server's own schema checks them.
    """

    model_config = ConfigDict(extra="allow")

    responses_create_params: ResponsesCreateParams


class SingleAgentTurnTaskInput(BaseModel):
    """``task_input`` of the single-agent-turn protocol, accepting the flat or nested shape."""

    model_config = ConfigDict(extra="forbid")

    responses_create_params: ResponsesCreateParams
    task_data: dict[str, Any]

    @model_validator(mode="before")
    @classmethod
    def _gather_task_data(cls, value: Any) -> Any:
        """Move flat task fields into ``task_data``; differing duplicates are an error."""
        if not is_mapping(value):
            return value
        fields: dict[str, Any] = dict(value)
        params = fields.pop("responses_create_params", None)
        nested = fields.pop("task_data", {})
        if not is_mapping(nested):
            return value  # let field validation report the bad task_data
        for key, flat_value in fields.items():
            if key in nested and nested[key] != flat_value:
                raise ValueError(f"Conflicting task field '{key}' inside and outside task_data")
        gathered: dict[str, Any] = {"task_data": {**nested, **fields}}
        if "responses_create_params" in value:
            gathered["responses_create_params"] = params
        return gathered
