"""Typed evidence a rollout retains about itself: the single source of truth for its shape.

Producers (the model gateway's capture, the agents' observation bundles, rollout collection)
build records with these models, and ``json_schemas()`` derives the published JSON Schemas from
them. The conformance checker deliberately does NOT validate records through these models: it
judges raw JSON with its own P0 checks, so one malformed field fails one check instead of
hiding the whole record. The models are therefore as strict as a producer should be — a record
a model accepts is shaped the way the checks expect — while the model-level invariants below
(unique ids, container identity copied into turns) are the ones the P0 profile leaves to them.

Layout (docs/evidence-format.md describes each part):
- ``ng_trajectory`` (:class:`TrajectoryRecord`, schema ``1.0``): invocations, turns,
  model_calls, tool_calls, gaps — the designated evidence surface.
- ``ng_agent_observations`` (:class:`AgentObservations`): the producer's unordered records.
- ``ng_model_call_capture`` (:class:`ModelCallCapture`): the capture attachment.
- the failure sidecar row (:class:`FailureSidecarRow`) and the gap codes (:class:`GapCode`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from gym_assets.records import keys
from gym_assets.records.ids import ROLLOUT_ID_PATTERN

TRAJECTORY_SCHEMA_VERSION = "1.0"
MODEL_SERVER_TYPE = "responses_api_models"
TOKEN_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "total_tokens",
    "cached_tokens",
)

NonBlank = Annotated[str, StringConstraints(pattern=r"\S")]
"""A string with at least one non-whitespace character (the reference's "nonblank")."""
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Millis = Annotated[float, Field(ge=0, allow_inf_nan=False)]
TokenCount = Annotated[int, Field(ge=0)]
Dialect = Literal["responses", "chat", "messages"]
InvocationStatus = Literal["completed", "failed", "incomplete", "unknown"]
ToolStatus = Literal["completed", "failed", "timeout", "cancelled", "incomplete", "unknown"]
TimingSource = Literal["executor", "artifact", "harness"]
CompactionOutcome = Literal["completed", "failed", "aborted", "unknown"]
SandboxRole = Literal["agent", "verifier", "environment"]
SandboxOutcome = Literal[
    "completed", "failed", "timeout", "oom", "sandbox_error", "cancelled", "unknown"
]
JsonObject = dict[str, Any]


class _Strict(BaseModel):
    """Base: strict types (no "1" for 1, no true for 1) and no unknown keys."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)


# --------------------------------------------------------------------------- references


class ModelRef(_Strict):
    """Which model server answered: ``{type: responses_api_models, name}``."""

    type: Literal["responses_api_models"] = MODEL_SERVER_TYPE
    name: NonBlank


class ModelCallRef(_Strict):
    """A reference to one model call: by call id, or by (model server, response id).

    Validity is the grammar of ``refs.py``; the model enforces the same rule so a producer
    cannot emit a reference the checker would call invalid.
    """

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {
                    "required": ["model_call_id"],
                    "properties": {"model_call_id": {"type": "string"}},
                },
                {
                    "required": ["model_ref", "response_id"],
                    "properties": {
                        "model_ref": {"type": "object"},
                        "response_id": {"type": "string"},
                    },
                },
            ]
        }
    )

    model_call_id: NonBlank | None = None
    model_ref: ModelRef | None = None
    response_id: NonBlank | None = None

    @model_validator(mode="after")
    def _one_identifying_form(self) -> ModelCallRef:
        if self.model_call_id is None and (self.model_ref is None or self.response_id is None):
            raise ValueError("a model-call reference needs model_call_id or model_ref+response_id")
        return self


# --------------------------------------------------------------------------- gaps


class GapCode(StrEnum):
    """Gap codes producers emit. Unknown codes are allowed on records; these are the known ones."""

    MODEL_CALL_CAPTURE_NO_RECORDS = "model_call_capture_no_records"
    MODEL_CALL_CAPTURE_RECORDS_UNREADABLE = "model_call_capture_records_unreadable"
    MODEL_CALL_CAPTURE_INCOMPLETE = "model_call_capture_incomplete"
    MODEL_CALL_CAPTURE_UNREADABLE = "model_call_capture_unreadable"
    MODEL_CALL_CAPTURE_GAP_INVALID = "model_call_capture_gap_invalid"
    AGENT_OBSERVATION_JOIN_FAILED = "agent_observation_join_failed"
    MODEL_CALL_REFERENCE_UNMATCHED = "model_call_reference_unmatched"
    MODEL_CALL_REFERENCE_AMBIGUOUS = "model_call_reference_ambiguous"
    MODEL_CALL_REFERENCE_CONFLICT = "model_call_reference_conflict"
    MODEL_CALL_OWNERSHIP_UNAVAILABLE = "model_call_ownership_unavailable"
    MODEL_CALLS_UNAVAILABLE = "model_calls_unavailable"
    TURNS_UNAVAILABLE = "turns_unavailable"
    TURN_EVIDENCE_INCOMPLETE = "turn_evidence_incomplete"
    TURN_MODEL_CALL_SCOPE_INCOMPLETE = "turn_model_call_scope_incomplete"
    TRAJECTORY_PROJECTION_FAILED = "trajectory_projection_failed"
    CONVERSATION_UNAVAILABLE = "conversation_unavailable"
    INVOCATION_STATUS_UNAVAILABLE = "invocation_status_unavailable"
    PRODUCER_TRAJECTORY_INVALID = "producer_trajectory_invalid"
    PRODUCER_TRAJECTORY_IDENTITY_MISMATCH = "producer_trajectory_identity_mismatch"
    AGENT_OBSERVATIONS_INVALID = "agent_observations_invalid"
    TOOL_TIMING_UNAVAILABLE = "tool_timing_unavailable"
    MULTIMODAL_HISTORY_REDACTED = "multimodal_history_redacted"


class GapEffect(StrEnum):
    """Which P0 gap check a gap code fails (codes with no effect map to ``None``)."""

    CAPTURE = "capture"  # calls.capture_gap
    OWNERSHIP = "ownership"  # ownership.gap
    STEPS = "steps"  # steps.gap
    STEP_ACCOUNTING = "step_accounting"  # steps.accounting_gap


_STEP_GAPS = frozenset(
    {
        GapCode.TURNS_UNAVAILABLE,
        GapCode.TURN_EVIDENCE_INCOMPLETE,
        GapCode.TRAJECTORY_PROJECTION_FAILED,
    }
)


def gap_effect(code: str) -> GapEffect | None:
    """Classify a gap code by its prefix or exact value; ``None``: informational only."""
    if code.startswith("model_call_capture") or code == GapCode.AGENT_OBSERVATION_JOIN_FAILED:
        return GapEffect.CAPTURE
    if code.startswith("model_call_reference") or code == GapCode.MODEL_CALL_OWNERSHIP_UNAVAILABLE:
        return GapEffect.OWNERSHIP
    if code in _STEP_GAPS:
        return GapEffect.STEPS
    if code == GapCode.TURN_MODEL_CALL_SCOPE_INCOMPLETE:
        return GapEffect.STEP_ACCOUNTING
    return None


class ObservationGap(_Strict):
    """Something the producer knows it could not retain."""

    code: NonBlank
    invocation_id: str | None = None
    detail: str | None = None


# --------------------------------------------------------------------------- observations


class AgentInvocation(_Strict):
    """One run of an agent (the root agent or a spawned sub-agent) and the calls it owns."""

    kind: Literal["agent_invocation"] = "agent_invocation"
    invocation_id: NonBlank
    parent_invocation_id: NonBlank | None = None
    spawned_by_tool_call_id: str | None = None
    status: InvocationStatus = "unknown"
    duration_ms: Millis | None = None
    error_type: str | None = None
    model_calls: list[ModelCallRef] = Field(default_factory=list)
    conversation: list[JsonObject] = Field(default_factory=list)


class ToolCallObservation(_Strict):
    """One tool execution as the producer saw it (clocks are P1 and optional)."""

    kind: Literal["tool_call"] = "tool_call"
    invocation_id: NonBlank
    tool_call_id: NonBlank
    tool_name: NonBlank
    sandbox_id: str | None = None
    started_at: Seconds | None = None
    completed_at: Seconds | None = None
    duration_ms: Millis | None = None
    timing_source: TimingSource | None = None
    status: ToolStatus = "unknown"
    error_type: str | None = None


class ContextCompaction(_Strict):
    """A context compaction; its ``model_calls`` are helper calls that belong to no step."""

    kind: Literal["context_compaction"] = "context_compaction"
    invocation_id: NonBlank
    observed_at: Seconds | None = None
    trigger: str | None = None
    tokens_before: TokenCount | None = None
    tokens_after: TokenCount | None = None
    outcome: CompactionOutcome = "unknown"
    summary: str | None = None
    first_kept_item_id: str | None = None
    before_model_call: ModelCallRef | None = None
    model_calls: list[ModelCallRef] = Field(default_factory=list)
    after_model_call: ModelCallRef | None = None


class SandboxObservation(_Strict):
    """Where the agent, verifier or environment ran and how that ended."""

    kind: Literal["sandbox"] = "sandbox"
    role: SandboxRole
    provider: str | None = None
    sandbox_id: NonBlank
    outcome: SandboxOutcome = "unknown"
    exit_code: int | None = None
    wall_time_s: Seconds | None = None
    cpu_time_s: Seconds | None = None
    peak_memory_mib: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    resource_usage_source: str | None = None
    error_type: str | None = None


ObservationRecord = Annotated[
    AgentInvocation | ToolCallObservation | ContextCompaction | SandboxObservation,
    Field(discriminator="kind"),
]


class AgentObservations(_Strict):
    """``ng_agent_observations``: the producer bundle (unordered records plus gaps)."""

    source: NonBlank
    records: list[ObservationRecord] = Field(default_factory=list)
    gaps: list[ObservationGap] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_invocations(self) -> AgentObservations:
        ids = [r.invocation_id for r in self.records if isinstance(r, AgentInvocation)]
        _require_unique(ids, "invocation_id")
        return self


# --------------------------------------------------------------------------- trajectory


class ResponseMetadata(_Strict):
    """What the model server answered, minus the body."""

    response_id: NonBlank | None = None
    model_ref: ModelRef
    model: str | None = None
    dialect: Dialect
    status_code: Annotated[int, Field(ge=100, le=599)] | None = None
    response_status: NonBlank | None = None
    finish_reason: NonBlank | None = None
    error_category: NonBlank | None = None
    latency_ttft_ms: Millis | None = None


class TokenStats(_Strict):
    """Provider token counts; ``None`` means unknown, never zero."""

    prompt_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = None
    reasoning_tokens: TokenCount | None = None
    total_tokens: TokenCount | None = None
    cached_tokens: TokenCount | None = None


class TrajectoryModelCall(_Strict):
    """One model exchange (success or failure) with its payloads."""

    model_call_id: NonBlank
    started_at: Seconds | None = None
    completed_at: Seconds | None = None
    duration_ms: Millis | None = None
    request: JsonObject | str | None = None
    response: JsonObject | str | None = None
    response_metadata: ResponseMetadata
    token_stats: TokenStats = Field(default_factory=TokenStats)


class TrajectoryTurn(_Strict):
    """One policy step. ``resolved`` has no default: the key must always be written."""

    invocation_id: NonBlank
    task_id: NonBlank
    rollout_id: NonBlank
    turn_no: Annotated[int, Field(ge=1)]
    timestamp: Seconds
    question: Any = None
    answer: Any = None
    reasoning_content: Any = None
    resolved: bool | None
    step_count: Annotated[int, Field(ge=0)] | None = None
    model_calls: list[ModelCallRef] = Field(min_length=1)


class TrajectoryToolCall(ToolCallObservation):
    """A tool execution plus the model-visible output copied from the conversation."""

    output: str | list[Any] | JsonObject | None = None


class TrajectoryRecord(_Strict):
    """``ng_trajectory`` schema 1.0 — the canonical evidence the checker reads."""

    schema_version: Literal["1.0"] = TRAJECTORY_SCHEMA_VERSION
    task_id: NonBlank
    rollout_id: NonBlank
    invocations: list[AgentInvocation] = Field(default_factory=list)
    turns: list[TrajectoryTurn] = Field(default_factory=list)
    model_calls: list[TrajectoryModelCall] = Field(default_factory=list)
    tool_calls: list[TrajectoryToolCall] = Field(default_factory=list)
    gaps: list[ObservationGap] = Field(default_factory=list)

    @model_validator(mode="after")
    def _invariants(self) -> TrajectoryRecord:
        """Invariants the P0 checks leave to the model: unique ids, identity in every turn."""
        _require_unique([i.invocation_id for i in self.invocations], "invocation_id")
        _require_unique([c.model_call_id for c in self.model_calls], "model_call_id")
        _require_unique(
            [(t.invocation_id, t.turn_no) for t in self.turns], "(invocation_id, turn_no)"
        )
        for turn in self.turns:
            if turn.task_id != self.task_id or turn.rollout_id != self.rollout_id:
                raise ValueError("every turn must carry the trajectory's task_id and rollout_id")
        return self


def _require_unique(values: list[Any], what: str) -> None:
    duplicates = [v for v, n in Counter(values).items() if n > 1]
    if duplicates:
        raise ValueError(f"duplicate {what} values: {len(duplicates)}")


# --------------------------------------------------------------------------- capture


class UpstreamCall(_Strict):
    """The model server's side of a call the gateway translated between dialects: what went
    to the server in its dialect and what it answered (``response_raw``: a stream's events)."""

    dialect: Dialect
    request: JsonObject | None = None
    status_code: int | None = None
    error_category: NonBlank | None = None
    response: JsonObject | None = None
    response_raw: str | None = None


class CaptureExchange(_Strict):
    """One line of ``<capture_dir>/<rollout_id>.capture.jsonl`` written by the gateway.

    ``request``/``response`` are the agent's side; ``upstream`` is set when the call was
    translated for a model server speaking the other dialect."""

    model_call_id: NonBlank
    dialect: Dialect
    model_ref: ModelRef
    started_at: Seconds
    completed_at: Seconds | None = None
    latency_ms: Millis | None = None
    latency_ttft_ms: Millis | None = None
    status_code: int | None = None
    error_category: NonBlank | None = None
    request: JsonObject | None = None
    response: JsonObject | None = None
    request_raw: str | None = None
    response_raw: str | None = None
    client_session_id: str | None = None
    upstream: UpstreamCall | None = None


class ModelCallRecord(_Strict):
    """A captured call as attached to the rollout (payloads may be stripped)."""

    model_call_id: NonBlank
    response_id: str | None = None
    call_index: Annotated[int, Field(ge=0)]
    model_ref: ModelRef
    model: str | None = None
    dialect: Dialect
    status_code: int | None = None
    response_status: str | None = None
    finish_reason: str | None = None
    started_at: Seconds | None = None
    completed_at: Seconds | None = None
    tokens_in: TokenCount | None = None
    tokens_out: TokenCount | None = None
    tokens_reasoning: TokenCount | None = None
    tokens_total: TokenCount | None = None
    request: JsonObject | None = None
    response: JsonObject | None = None
    request_raw: str | None = None
    response_raw: str | None = None
    tool_calls: list[Any] | None = None
    reasoning_content: str | None = None
    cache_hit: bool | None = None
    cached_tokens: TokenCount | None = None
    cache_creation_tokens: TokenCount | None = None
    error_category: str | None = None
    latency_total_ms: Millis | None = None
    latency_ttft_ms: Millis | None = None
    client_session_id: str | None = None
    upstream: UpstreamCall | None = None  # payloads stripped with the call's


class ModelCallCapture(_Strict):
    """``ng_model_call_capture``: provenance only; never a source of P0 verdicts."""

    rollout_id: NonBlank
    metrics: JsonObject | None = None
    calls: list[ModelCallRecord] = Field(default_factory=list)
    gaps: list[ObservationGap] = Field(default_factory=list)


# --------------------------------------------------------------------------- rows


class RolloutRecord(BaseModel):
    """One success row of ``rollouts.jsonl``: grades at top level, evidence in attachments.

    Unknown keys (``response``, benchmark extras, collector stamps) are kept: the row belongs
    to the verifier and the collector, this model only types the fields conformance reads.
    """

    model_config = ConfigDict(strict=True, extra="allow", populate_by_name=True)

    task_index: int | None = Field(default=None, alias=keys.TASK_INDEX)
    rollout_index: int | None = Field(default=None, alias=keys.ROLLOUT_INDEX)
    attempt_index: Annotated[int, Field(ge=0)] | None = Field(
        default=None, alias=keys.ATTEMPT_INDEX
    )
    rollout_id: Annotated[str, StringConstraints(pattern=ROLLOUT_ID_PATTERN.pattern)] | None = (
        Field(default=None, alias=keys.ROLLOUT_ID)
    )
    reward: Annotated[float, Field(allow_inf_nan=False)] | None = None
    evaluation_completed: bool | None = None
    mask_sample: bool | None = None
    failure_kind: NonBlank | None = None
    failure_reason: NonBlank | None = None
    ng_trajectory: TrajectoryRecord | None = None
    ng_agent_observations: AgentObservations | None = None
    ng_model_call_capture: ModelCallCapture | None = None

    def to_row(self) -> JsonObject:
        """The JSON row: aliases for ``_ng_*`` keys; unset top-level fields are omitted."""
        dumped = self.model_dump(mode="json", by_alias=True)
        return {k: v for k, v in dumped.items() if v is not None}


class FailureSidecarRow(BaseModel):
    """One failed attempt in ``<stem>_failures.jsonl``; never read as a rollout by the checks.

    Producers build it by field name and write :meth:`to_row`; every key on disk is the field
    name behind ``_ng_`` (``failure_class`` is ``_ng_failure_class``). Unknown
    ``_ng_failure_*`` details a legacy server reported are kept as extras."""

    model_config = ConfigDict(
        strict=True,
        extra="allow",
        populate_by_name=True,
        alias_generator=lambda field: keys.COLLECTOR_PREFIX + field,
    )

    failure_class: NonBlank
    failure_terminal: bool | None = None
    failure_message: str | None = None
    failure_kind: str | None = None
    failure_stage: str | None = None
    failure_type: str | None = None
    failure_http_status: int | None = None
    failure_response_body: Annotated[str, Field(max_length=2001)] | None = None
    failure_partial_response: Any = None
    no_persist: bool | None = None

    def to_row(self, stamps: Mapping[str, Any] | None = None) -> JsonObject:
        """The JSON row: the failure's set keys, then the attempt's stamps."""
        row = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return row if stamps is None else {**row, **stamps}


def is_failure_row(row: object) -> bool:
    """A failure-sidecar row (presence of ``_ng_failure_class`` marks a failure)."""
    return isinstance(row, dict) and keys.FAILURE_CLASS in row


# --------------------------------------------------------------------------- schemas

EVIDENCE_MODELS: dict[str, type[BaseModel]] = {
    keys.TRAJECTORY: TrajectoryRecord,
    keys.AGENT_OBSERVATIONS: AgentObservations,
    keys.MODEL_CALL_CAPTURE: ModelCallCapture,
    "capture_exchange": CaptureExchange,
    "model_call_ref": ModelCallRef,
    "rollout": RolloutRecord,
    "failure_sidecar": FailureSidecarRow,
}


def json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schemas (draft 2020-12) derived from the models, keyed by evidence name."""
    schemas = {}
    for name, model in EVIDENCE_MODELS.items():
        schema = model.model_json_schema(by_alias=True)
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schemas[name] = schema
    return schemas
