"""Behavioral checks: the retained evidence held against an independent, controlled observation.

Artifact checks can only say that a record is well-formed; a harness could still save tidy
but wrong evidence (a dropped retry, an invented response id, a zero for an unknown count, a
tool marked completed that exited 7). In a scripted scenario the provider witnessed every
exchange and tool result itself (``witness.json``), so these checks compare the two sides —
by fingerprint, never by copying payloads into a report.

All 21 checks are tier P0, kind ``behavioral``. Each is a row of ``BEHAVIORAL_SPECS``: its
applicability comes from the scenario prescription alone, never from the data.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from gym_assets.conformance.checker import CheckContext, CheckSource
from gym_assets.conformance.engine import Check, Kind, Results, Tier
from gym_assets.conformance.fingerprint import canonical_json, exchange_fingerprint
from gym_assets.conformance.record_view import (
    RecordView,
    as_list,
    as_mapping,
    response_metadata,
    token_stats,
)
from gym_assets.conformance.witness import Witness, WitnessedAttempt, WitnessedToolCall
from gym_assets.records.evidence import TOKEN_FIELDS

WITNESS_LOCATION = "witness.json"
CALLS_LOCATION = "$.ng_trajectory.model_calls"
TOOLS_LOCATION = "$.ng_trajectory.tool_calls"
REWARD_LOCATION = "$.reward"

Fingerprint = Callable[[Any, Any, Any], str]


class ScenarioPrescription(Protocol):
    """What a scenario prescribes; any object with these attributes (e.g. a scenario) fits.

    Tool exit codes are not here: the witness records the code prescribed for each call.
    ``create_params`` is the task's ``responses_create_params`` with the run's overrides
    applied; ``model`` is the run's model, what a harness must send when the task names none.
    """

    @property
    def tool_steps(self) -> int: ...
    @property
    def http_errors(self) -> tuple[int, ...]: ...
    @property
    def terminal_error(self) -> bool: ...
    @property
    def expected_reward(self) -> float: ...
    @property
    def create_params(self) -> Mapping[str, Any]: ...
    @property
    def model(self) -> str | None: ...


@dataclass(frozen=True)
class Prescription:
    """A plain prescription, defaulting to the reference ``tool_success`` scenario."""

    tool_steps: int = 2
    http_errors: tuple[int, ...] = ()
    terminal_error: bool = False
    expected_reward: float = 1.0
    create_params: Mapping[str, Any] = field(default_factory=dict[str, Any])
    model: str | None = None


def _same_json(left: Any, right: Any) -> bool:
    """JSON equality that keeps types apart (``true`` is not ``1``, ``1.0`` is not ``1``)."""
    return _json_key(left) == _json_key(right)


def _json_key(value: Any) -> str:
    """A comparable key for any value; non-JSON values (NaN, odd types) stay distinct."""
    try:
        return canonical_json(value)
    except (TypeError, ValueError):
        return "non-json:" + repr(value)


def _multiset(keys: Iterable[Any]) -> Counter[str]:
    return Counter(_json_key(k) for k in keys)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# Where provider usage keeps each token count, per protocol, in token_stats order:
# prompt, completion, reasoning, total, cached.
_CHAT_USAGE = (
    ("prompt_tokens",),
    ("completion_tokens",),
    ("completion_tokens_details", "reasoning_tokens"),
    ("total_tokens",),
    ("prompt_tokens_details", "cached_tokens"),
)
_RESPONSES_USAGE = (
    ("input_tokens",),
    ("output_tokens",),
    ("output_tokens_details", "reasoning_tokens"),
    ("total_tokens",),
    ("input_tokens_details", "cached_tokens"),
)


def _dig(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        value = as_mapping(value).get(key)
    return value


def _is_chat_request(request: Any) -> bool:
    return "messages" in as_mapping(request)


def witnessed_usage(request: Any, response: Any) -> list[Any]:
    """Token counts as the provider sent them; an omitted count is ``None``, never zero."""
    usage = as_mapping(response).get("usage")
    paths = _CHAT_USAGE if _is_chat_request(request) else _RESPONSES_USAGE
    return [_dig(usage, path) for path in paths]


def witnessed_finish(request: Any, response: Any) -> Any:
    """Chat completions carry a finish reason on the first choice; other bodies have none."""
    if not _is_chat_request(request):
        return None
    choices = as_list(as_mapping(response).get("choices"))
    return as_mapping(choices[0]).get("finish_reason") if choices else None


# Sampling parameters and the value an omitted (or null) one means: the OpenAI APIs' defaults.
# A harness that leaves one out asks for the default, so it keeps a task that leaves it out too.
SAMPLING_DEFAULTS: Mapping[str, float] = {"temperature": 1.0, "top_p": 1.0}
# Where each dialect puts the task's ``max_output_tokens``. A harness may bound its replies when
# the task sets no bound; it may not change a bound the task set.
_MAX_TOKENS = {"chat": ("max_completion_tokens", "max_tokens"), "responses": ("max_output_tokens",)}


def carries_tools(request: Any) -> bool:
    """A turn of the task's conversation; a request without tools is auxiliary (a title).
    The scripted provider draws the same line."""
    tools = as_mapping(request).get("tools")
    return isinstance(tools, list) and bool(tools)


def _sampling(body: Mapping[str, Any], dialect: str) -> dict[str, Any]:
    """The sampling a request (or the task's create params) asks for, defaults filled in."""
    asked: dict[str, Any] = {
        name: default if body.get(name) is None else body.get(name)
        for name, default in SAMPLING_DEFAULTS.items()
    }
    names = _MAX_TOKENS[dialect]
    asked["max_output_tokens"] = next((body[n] for n in names if body.get(n) is not None), None)
    return asked


def _same_number(left: Any, right: Any) -> bool:
    if _is_number(left) and _is_number(right):
        return left == right
    return _same_json(left, right)


def _history(request: Any) -> list[Any]:
    body = as_mapping(request)
    return as_list(body.get("messages") if _is_chat_request(body) else body.get("input"))


def conversation_facts(request: Any) -> list[str]:
    """The tool calls and tool results of a request's history, in order, as comparable keys."""
    facts = []
    for item in map(as_mapping, _history(request)):
        for call in map(as_mapping, as_list(item.get("tool_calls"))):
            facts.append(_json_key(["call", call.get("id")]))
        if item.get("type") == "function_call":
            facts.append(_json_key(["call", item.get("call_id")]))
        elif item.get("role") == "tool":
            facts.append(_json_key(["result", item.get("tool_call_id"), item.get("content")]))
        elif item.get("type") == "function_call_output":
            facts.append(_json_key(["result", item.get("call_id"), item.get("output")]))
    return facts


def issued_calls(response: Any) -> list[str]:
    """The call ids of the tool calls a witnessed reply issued (either dialect)."""
    body = as_mapping(response)
    choices = as_list(body.get("choices"))
    message = as_mapping(as_mapping(choices[0]).get("message")) if choices else {}
    chat = [as_mapping(c).get("id") for c in as_list(message.get("tool_calls"))]
    items = [as_mapping(i) for i in as_list(body.get("output"))]
    responses = [i.get("call_id") for i in items if i.get("type") == "function_call"]
    return [c for c in chat + responses if isinstance(c, str)]


def _strings(value: Any) -> Iterable[str]:
    """Every string inside a JSON value, where a harness may have put the task's words."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def task_texts(create_params: Mapping[str, Any]) -> list[str]:
    """The task's own words: the text of its user messages (or its input string). Its system
    message is left out: a CLI harness may word its instructions its own way."""
    given = create_params.get("input")
    if isinstance(given, str):
        return [given] if given else []
    texts = []
    for item in map(as_mapping, as_list(given)):
        if item.get("role", "user") != "user":
            continue
        content = item.get("content")
        parts = [content] if isinstance(content, str) else as_list(content)
        texts += [p if isinstance(p, str) else as_mapping(p).get("text") for p in parts]
    return [t for t in texts if isinstance(t, str) and t]


def _response_facts(attempt: WitnessedAttempt) -> list[Any]:
    body = as_mapping(attempt.response)
    return [body.get("id"), body.get("status"), witnessed_finish(attempt.request, attempt.response)]


def _saved_response_facts(call: Mapping[str, Any]) -> list[Any]:
    meta = response_metadata(call)
    return [meta.get("response_id"), meta.get("response_status"), meta.get("finish_reason")]


def _saved_tokens(call: Mapping[str, Any]) -> list[Any]:
    stats = token_stats(call)
    return [stats.get(name) for name in TOKEN_FIELDS]


ExchangeFacts = tuple[Callable[[WitnessedAttempt], Any], Callable[[Mapping[str, Any]], Any]]
EXCHANGE_VIEWS: Mapping[str, ExchangeFacts] = {
    "exchange": (lambda a: None, lambda c: None),
    "metadata": (_response_facts, _saved_response_facts),
    "tokens": (lambda a: witnessed_usage(a.request, a.response), _saved_tokens),
}
"""What each exchange comparison adds to the fingerprint: (witnessed side, saved side)."""


@dataclass
class BehavioralContext:
    """The inputs of one scenario's behavioral checks, with the derived views they share."""

    witness: Witness | None
    record: Mapping[str, Any] | None
    prescription: ScenarioPrescription = field(default_factory=Prescription)
    fingerprint: Fingerprint = exchange_fingerprint

    @cached_property
    def saved(self) -> RecordView:
        return RecordView(self.record)

    @cached_property
    def saved_calls(self) -> list[Mapping[str, Any]]:
        return [as_mapping(c) for c in self.saved.calls]

    @cached_property
    def saved_tools(self) -> list[Mapping[str, Any]]:
        return [as_mapping(t) for t in self.saved.tools]

    @cached_property
    def saved_tool_by_id(self) -> dict[Any, Mapping[str, Any]]:
        return {
            t.get("tool_call_id"): t
            for t in self.saved_tools
            if isinstance(t.get("tool_call_id"), str)
        }

    @property
    def witnessed(self) -> Witness:
        assert self.witness is not None, "evaluated only when the witness is available"
        return self.witness

    @property
    def turns(self) -> list[WitnessedAttempt]:
        """The witnessed requests that were turns of the task's conversation (they offer tools)."""
        return [a for a in self.witnessed.attempts if carries_tools(a.request)]

    # ------------------------------------------------------------------ model exchanges

    def _saved_fp(self, call: Mapping[str, Any]) -> str:
        status = response_metadata(call).get("status_code")
        return self.fingerprint(call.get("request"), status, call.get("response"))

    def exchanges_match(self, view: str) -> bool:
        """Witnessed and saved exchanges agree as multisets of (fingerprint, view facts)."""
        witnessed_facts, saved_facts = EXCHANGE_VIEWS[view]
        witnessed = (
            [self.fingerprint(a.request, a.status_code, a.response), witnessed_facts(a)]
            for a in self.witnessed.attempts
        )
        saved = ([self._saved_fp(c), saved_facts(c)] for c in self.saved_calls)
        return _multiset(witnessed) == _multiset(saved)

    # ------------------------------------------------------------------ tools

    def tools_joined(self) -> list[tuple[WitnessedToolCall, Mapping[str, Any], Mapping[str, Any]]]:
        """(witnessed tool, saved tool, its one originating ``function_call``) for joined tools."""
        joined = []
        for tool in self.witnessed.tool_calls:
            saved = self.saved_tool_by_id.get(tool.id)
            requests = self.requests_for(tool.id, saved)
            if saved is not None and len(requests) == 1:
                joined.append((tool, saved, requests[0]))
        return joined

    def requests_for(
        self, tool_id: str, saved: Mapping[str, Any] | None
    ) -> list[Mapping[str, Any]]:
        """``function_call`` items for ``tool_id`` in the saved tool's invocation conversations."""
        if saved is None:
            return []
        owner = saved.get("invocation_id")
        found = []
        for invocation in self.saved.invocations:
            invocation = as_mapping(invocation)
            if invocation.get("invocation_id") != owner:
                continue
            for item in as_list(invocation.get("conversation")):
                item = as_mapping(item)
                if item.get("type") == "function_call" and item.get("call_id") == tool_id:
                    found.append(item)
        return found


# ---------------------------------------------------------------------- predicates


def _error_prefix(ctx: BehavioralContext) -> list[int | None]:
    n = len(ctx.prescription.http_errors)
    return [a.status_code for a in ctx.witnessed.attempts[:n]]


def _retries_identical(ctx: BehavioralContext) -> bool:
    n = len(ctx.prescription.http_errors)
    attempts = ctx.witnessed.attempts[:n]
    return all(_same_json(a.request, attempts[0].request) for a in attempts[1:])


def _terminal_error(ctx: BehavioralContext) -> bool:
    last = ctx.prescription.http_errors[-1] if ctx.prescription.http_errors else None
    attempts = ctx.witnessed.attempts
    return bool(attempts) and all(a.status_code == last for a in attempts)


def _tools_executed(ctx: BehavioralContext) -> bool:
    tools = ctx.witnessed.tool_calls
    return len(tools) == ctx.prescription.tool_steps and all(
        t.executed and t.result_seen for t in tools
    )


def _one_verification(ctx: BehavioralContext) -> bool:
    return len(ctx.witnessed.verifications) == 1


def _verifier_outcome(ctx: BehavioralContext) -> bool:
    return _one_verification(ctx) and (
        ctx.witnessed.verifications[0].reward == ctx.prescription.expected_reward
    )


def _verifier_answer(ctx: BehavioralContext) -> bool:
    return _one_verification(ctx) and ctx.witnessed.verifications[0].answer_seen


def _saved_reward(ctx: BehavioralContext) -> bool:
    reward = ctx.saved.row.get("reward")
    return _is_number(reward) and reward == ctx.prescription.expected_reward


def _witness_ids(ctx: BehavioralContext) -> bool:
    saved_ids = [t.get("tool_call_id") for t in ctx.saved_tools]
    witnessed_ids = [t.id for t in ctx.witnessed.tool_calls]
    return (
        all(isinstance(i, str) for i in saved_ids)
        and Counter(saved_ids) == Counter(witnessed_ids)
        and len(set(witnessed_ids)) == len(witnessed_ids)
    )


def _witness_join(ctx: BehavioralContext) -> bool:
    return len(ctx.tools_joined()) == len(ctx.witnessed.tool_calls)


def _request_matches(
    tool: WitnessedToolCall, saved: Mapping[str, Any], request: Mapping[str, Any]
) -> bool:
    name = request.get("name")
    namespace = request.get("namespace")
    full_name = f"{namespace}__{name}" if namespace else name
    arguments = request.get("arguments")
    if not isinstance(arguments, str):
        return False
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return False
    return (
        full_name == tool.name
        and _same_json(decoded, tool.arguments)
        and saved.get("tool_name") == name
    )


def _witness_request(ctx: BehavioralContext) -> bool:
    return all(_request_matches(*joined) for joined in ctx.tools_joined())


def _witness_status(ctx: BehavioralContext) -> bool:
    def expected(tool: WitnessedToolCall) -> str:
        return "failed" if tool.exit_code != 0 else "completed"

    return all(
        ctx.saved_tool_by_id[t.id].get("status") == expected(t) for t in ctx.witnessed.tool_calls
    )


def _witness_output(ctx: BehavioralContext) -> bool:
    return all(
        t.outputs
        and all(_same_json(o, ctx.saved_tool_by_id[t.id].get("output")) for o in t.outputs)
        for t in ctx.witnessed.tool_calls
    )


def _task_params_kept(ctx: BehavioralContext) -> bool:
    """Every turn names the task's model (else the run's) and asks for the task's sampling."""
    params = ctx.prescription.create_params
    model = params.get("model") or ctx.prescription.model
    asked = _sampling(params, "responses")
    for attempt in ctx.turns:
        body = as_mapping(attempt.request)
        sent = _sampling(body, "chat" if _is_chat_request(body) else "responses")
        if model is not None and body.get("model") != model:
            return False
        if not all(_same_number(sent[name], asked[name]) for name in SAMPLING_DEFAULTS):
            return False
        bound = asked["max_output_tokens"]
        if bound is not None and not _same_number(sent["max_output_tokens"], bound):
            return False
    return True


def _full_history(ctx: BehavioralContext) -> bool:
    """Each turn keeps the task's words, every call issued so far, and the previous turn's
    calls and results unchanged and in order (nothing dropped, nothing rewritten)."""
    texts = task_texts(ctx.prescription.create_params)
    issued: list[str] = []
    previous: list[str] = []
    for attempt in ctx.witnessed.attempts:
        if carries_tools(attempt.request):
            body = as_mapping(attempt.request)
            said = list(_strings([_history(body), body.get("instructions")]))
            if not all(any(text in s for s in said) for text in texts):
                return False
            facts = conversation_facts(body)
            if facts[: len(previous)] != previous:
                return False
            if any(_json_key(["call", c]) not in facts for c in issued):
                return False
            previous = facts
        issued += issued_calls(attempt.response)
    return True


# ---------------------------------------------------------------------- the catalogue


def _always_available(ctx: BehavioralContext) -> bool:
    return True


def _error_prefix_witnessed(ctx: BehavioralContext) -> bool:
    return len(ctx.witnessed.attempts) >= len(ctx.prescription.http_errors)


ALWAYS = "always"
HTTP_ERRORS = "HTTP errors prescribed"
RETRIED_ERRORS = "two or more HTTP errors prescribed"
TERMINAL = "terminal model error"
NOT_TERMINAL = "no terminal model error"
TOOL_STEPS = "tool steps prescribed"
APPLIES: Mapping[str, Callable[[ScenarioPrescription], bool]] = {
    ALWAYS: lambda p: True,
    HTTP_ERRORS: lambda p: bool(p.http_errors),
    RETRIED_ERRORS: lambda p: len(p.http_errors) > 1,
    TERMINAL: lambda p: p.terminal_error,
    NOT_TERMINAL: lambda p: not p.terminal_error,
    TOOL_STEPS: lambda p: p.tool_steps > 0,
}
"""Declared applicability rules, named as the catalogue page shows them."""


@dataclass(frozen=True)
class BehavioralSpec:
    """One behavioral check as data: identity, reporting, applicability and its predicate."""

    id: str
    evidence: tuple[str, ...]
    location: str
    reason: str
    requirement: str
    applies: str
    passes: Callable[[BehavioralContext], bool]
    needs_record: bool = False
    depends_on: tuple[str, ...] = ()
    needs: Callable[[BehavioralContext], bool] = _always_available

    def available(self, ctx: BehavioralContext) -> bool:
        """The witness must exist, the record too when compared, plus any check-specific input."""
        if ctx.witness is None or (self.needs_record and ctx.record is None):
            return False
        return self.needs(ctx)

    def bind(self, ctx: BehavioralContext) -> Check:
        return Check(
            id=self.id,
            tier=Tier.P0,
            kind=Kind.BEHAVIORAL,
            evidence=self.evidence,
            location=self.location,
            reason=self.reason,
            depends_on=self.depends_on,
            applies=APPLIES[self.applies](ctx.prescription),
            available=self.available(ctx),
            predicate=lambda: self.passes(ctx),
        )


def _spec(
    check_id: str,
    te: str,
    location: str,
    applies: str,
    passes: Callable[[BehavioralContext], bool],
    reason: str,
    requirement: str,
    *,
    needs_record: bool = False,
    depends_on: tuple[str, ...] = (),
    needs: Callable[[BehavioralContext], bool] = _always_available,
) -> BehavioralSpec:
    evidence = tuple(f"TE-{n}" for n in te.split(",") if n)
    return BehavioralSpec(
        check_id,
        evidence,
        location,
        reason,
        requirement,
        applies,
        passes,
        needs_record,
        depends_on,
        needs,
    )


_IDS = ("tools.witness_ids",)
BEHAVIORAL_SPECS: tuple[BehavioralSpec, ...] = (
    _spec(
        "episode.initialized",
        "",
        WITNESS_LOCATION,
        ALWAYS,
        lambda c: c.witnessed.seeded == 1,
        "the episode's resources session was not seeded exactly once",
        "seed the task's resources session exactly once before the agent starts",
    ),
    _spec(
        "model.reached",
        "1",
        WITNESS_LOCATION,
        ALWAYS,
        lambda c: bool(c.witnessed.attempts),
        "the harness never reached the scripted model endpoint",
        "send at least one model request to the configured endpoint",
    ),
    _spec(
        "model.protocol",
        "",
        WITNESS_LOCATION,
        ALWAYS,
        lambda c: not c.witnessed.violations,
        "the harness broke the scripted conversation protocol",
        "advertise a shell tool, execute each tool call and return its result before asking again",
    ),
    _spec(
        "model.error_sequence",
        "1",
        WITNESS_LOCATION,
        HTTP_ERRORS,
        lambda c: _error_prefix(c) == list(c.prescription.http_errors),
        "witnessed HTTP statuses do not begin with the prescribed error sequence",
        "keep calling the model through the prescribed HTTP errors, one attempt per error",
    ),
    _spec(
        "model.retry_request",
        "1",
        WITNESS_LOCATION,
        RETRIED_ERRORS,
        _retries_identical,
        "a retried model request differs from the first attempt",
        "retry a failed model request with a byte-identical JSON body",
        needs=_error_prefix_witnessed,
    ),
    _spec(
        "model.terminal_error",
        "1",
        WITNESS_LOCATION,
        TERMINAL,
        _terminal_error,
        "not every witnessed attempt received the prescribed terminal error",
        "stop the episode on a permanent model error without inventing a successful reply",
    ),
    _spec(
        "model.task_params",
        "1",
        WITNESS_LOCATION,
        ALWAYS,
        _task_params_kept,
        "a model request named another model or asked for other sampling than the task's",
        "send the task's model (else the run's) and its sampling parameters unchanged in every"
        " request of the conversation",
    ),
    _spec(
        "model.full_history",
        "4",
        WITNESS_LOCATION,
        ALWAYS,
        _full_history,
        "a model request dropped or rewrote earlier turns of the conversation",
        "send the whole conversation so far with every request: the task, each tool call and"
        " its result, unchanged and in order",
    ),
    _spec(
        "model.finished",
        "",
        WITNESS_LOCATION,
        NOT_TERMINAL,
        lambda c: c.witnessed.finished,
        "the harness did not reach the scripted final answer",
        "continue the conversation until the scripted final answer",
    ),
    _spec(
        "tools.executed",
        "4,5",
        WITNESS_LOCATION,
        TOOL_STEPS,
        _tools_executed,
        "witnessed tool executions differ from the prescribed tool steps",
        "execute every prescribed tool call and show its result to the model",
    ),
    _spec(
        "verifier.outcome",
        "6",
        WITNESS_LOCATION,
        NOT_TERMINAL,
        _verifier_outcome,
        "the verifier did not grade exactly once with the expected reward",
        "call the verifier exactly once per episode",
    ),
    _spec(
        "verifier.answer",
        "6",
        WITNESS_LOCATION,
        NOT_TERMINAL,
        _verifier_answer,
        "the final answer did not reach the verifier exactly once",
        "hand the agent's final answer to the verifier",
    ),
    _spec(
        "verifier.saved_reward",
        "6",
        REWARD_LOCATION,
        NOT_TERMINAL,
        _saved_reward,
        "saved reward differs from the verifier's grade",
        "save the verifier's reward unchanged on the rollout",
        needs_record=True,
    ),
    _spec(
        "model.saved_exchanges",
        "1,4,7",
        CALLS_LOCATION,
        ALWAYS,
        lambda c: c.exchanges_match("exchange"),
        "retained model attempts differ from the independent witness; the canonical trajectory"
        " must keep every attempt (retries included) with its request, status and response",
        "keep every model attempt, retries and errors included, with its exact request, status"
        " and response",
        needs_record=True,
    ),
    _spec(
        "model.response_metadata",
        "1",
        CALLS_LOCATION,
        ALWAYS,
        lambda c: c.exchanges_match("metadata"),
        "retained response ids, statuses or finish reasons in the canonical trajectory differ"
        " from the independent witness",
        "copy each response's id, status and finish reason as the server sent them",
        needs_record=True,
    ),
    _spec(
        "model.token_counts",
        "2",
        CALLS_LOCATION,
        ALWAYS,
        lambda c: c.exchanges_match("tokens"),
        "retained token counts in the canonical trajectory differ from the provider usage seen"
        " by the independent witness",
        "copy each attempt's provider token counts, leaving omitted counts null (never zero)",
        needs_record=True,
    ),
    _spec(
        "tools.witness_ids",
        "5",
        TOOLS_LOCATION,
        TOOL_STEPS,
        _witness_ids,
        "retained tool call ids differ from the independent tool witness",
        "keep each executed tool call once, under the call id the model issued",
        needs_record=True,
    ),
    _spec(
        "tools.witness_join",
        "5",
        WITNESS_LOCATION,
        TOOL_STEPS,
        _witness_join,
        "a retained tool execution does not join exactly one request in its invocation's"
        " conversation",
        "keep exactly one originating function_call per tool execution in the owning"
        " invocation's conversation",
        needs_record=True,
        depends_on=_IDS,
    ),
    _spec(
        "tools.witness_request",
        "5",
        WITNESS_LOCATION,
        TOOL_STEPS,
        _witness_request,
        "retained tool request differs from the independent tool witness",
        "keep the tool request's name and arguments exactly as the model issued them",
        needs_record=True,
        depends_on=(*_IDS, "tools.witness_join"),
    ),
    _spec(
        "tools.witness_status",
        "5",
        WITNESS_LOCATION,
        TOOL_STEPS,
        _witness_status,
        "retained tool status differs from the exit code the tool was prescribed",
        "mark a tool that exited non-zero as failed and one that exited zero as completed",
        needs_record=True,
        depends_on=_IDS,
    ),
    _spec(
        "tools.witness_output",
        "5",
        WITNESS_LOCATION,
        TOOL_STEPS,
        _witness_output,
        "retained tool output differs from the independent tool witness",
        "keep the tool output exactly as the model was shown it",
        needs_record=True,
        depends_on=_IDS,
    ),
)


def behavioral_checks(ctx: BehavioralContext) -> list[Check]:
    """The 21 behavioral checks bound to one scenario's witness, record and prescription."""
    return [spec.bind(ctx) for spec in BEHAVIORAL_SPECS]


def run_behavioral(
    witness: Witness | None,
    record: Mapping[str, Any] | None,
    prescription: ScenarioPrescription | None = None,
    *,
    fingerprint: Fingerprint = exchange_fingerprint,
    results: Results | None = None,
) -> Results:
    """Run every behavioral check into ``results`` (a fresh executor by default)."""
    ctx = BehavioralContext(witness, record, prescription or Prescription(), fingerprint)
    return (results or Results()).run_all(behavioral_checks(ctx))


def behavioral_source(
    witness: Witness | None,
    prescription: ScenarioPrescription | None = None,
    *,
    fingerprint: Fingerprint = exchange_fingerprint,
) -> CheckSource:
    """A ``check_record`` extra-check source: the behavioral checks join the record's P0 gate."""

    def source(context: CheckContext) -> list[Check]:
        ctx = BehavioralContext(
            witness, context.record, prescription or Prescription(), fingerprint
        )
        return behavioral_checks(ctx)

    return source
