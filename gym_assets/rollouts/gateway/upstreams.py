"""Where the gateway's answers come from: a script, a per-rollout reference script, or a real
OpenAI-compatible server.

Every upstream answers a :class:`ModelRequest` with an :class:`UpstreamReply` holding either a
whole body or a stream of SSE bytes; the gateway passes the bytes through unchanged and the
capture reads them, so offline and real upstreams are recorded by the same code. (A real server
that speaks the other dialect is wrapped by ``translation``, whose replies carry the server's
side as an :class:`UpstreamLeg`.)
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx2
import orjson

from gym_assets.limits import DEFAULT_MAX_ANSWER_BYTES
from gym_assets.records.contracts import Step
from gym_assets.rollouts.gateway.bodies import (
    ANSWER_TOO_LARGE,
    BodyTooLarge,
    capped,
    declared_length,
    read_capped,
)
from gym_assets.rollouts.gateway.render import (
    AssistantTurn,
    chat_completion,
    chat_sse,
    response_object,
    responses_sse,
)
from gym_assets.rollouts.gateway.script import (
    Dialect,
    ErrorReply,
    ScriptRunner,
    compile_script,
)

ROUTES: dict[Dialect, str] = {"chat": "/chat/completions", "responses": "/responses"}
# Scripted errors ask clients to retry at once; the openai SDKs honour retry-after-ms.
_RETRY_NOW = {"retry-after": "0", "retry-after-ms": "1"}


@dataclass(frozen=True)
class ModelRequest:
    dialect: Dialect
    body: dict[str, Any]
    rollout_id: str | None  # None for unprefixed (uncaptured) calls


@dataclass
class UpstreamLeg:
    """The model server's side of a translated call: the request in its dialect and what it
    answered, kept for the capture beside what the agent sent and got."""

    dialect: Dialect
    request: dict[str, Any]
    status: int | None = None
    response: dict[str, Any] | None = None
    response_raw: str | None = None  # a stream's events, or a body that is no JSON object
    category: str | None = None  # how the server's answer ended, when not well

    def fields(self) -> dict[str, Any]:
        """The capture line's ``upstream`` object."""
        return {
            "dialect": self.dialect,
            "request": self.request,
            "status_code": self.status,
            "error_category": self.category,
            "response": self.response,
            "response_raw": self.response_raw,
        }


@dataclass
class UpstreamReply:
    """An answer: ``content`` (whole body) or ``stream`` (SSE bytes), never both."""

    status: int
    content: bytes = b""
    parsed: dict[str, Any] | None = None  # ``content`` already decoded, when the upstream has it
    stream: AsyncIterator[bytes] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    media_type: str = "application/json"
    upstream: UpstreamLeg | None = None  # a translated call's other side


class UpstreamFailure(Exception):
    """The upstream gave no HTTP answer; ``category`` is the capture's error_category."""

    def __init__(self, category: str, message: str) -> None:
        super().__init__(message)
        self.category = category
        self.upstream: UpstreamLeg | None = None  # set on a translated call


class StreamBroken(Exception):
    """The connection under a stream failed; whether the answer was whole is for the reader of
    its events to say (a server may close abruptly right after its terminal event)."""


class Upstream(Protocol):
    async def open(self) -> None:
        """Acquire resources on the gateway's event loop; raise on bad configuration."""
        ...

    async def aclose(self) -> None: ...

    async def answer(self, request: ModelRequest) -> UpstreamReply: ...


def error_reply(
    status: int, message: str, kind: str, headers: Mapping[str, str] = {}
) -> UpstreamReply:
    return json_reply(status, ErrorReply(status, message, kind).body(), headers)


def json_reply(status: int, body: dict[str, Any], headers: Mapping[str, str] = {}) -> UpstreamReply:
    return UpstreamReply(status, orjson.dumps(body), body, headers=dict(headers))


async def _aiter(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def render_reply(answer: AssistantTurn | ErrorReply, request: ModelRequest) -> UpstreamReply:
    """The wire form of a scripted answer in the request's dialect and streaming mode."""
    if isinstance(answer, ErrorReply):
        return json_reply(answer.status, answer.body(), _RETRY_NOW)
    if request.body.get("stream") is True:
        if request.dialect == "chat":
            options = request.body.get("stream_options")
            usage = isinstance(options, Mapping) and options.get("include_usage") is True
            chunks = chat_sse(answer, include_usage=usage)
        else:
            chunks = responses_sse(answer)
        return UpstreamReply(200, stream=_aiter(chunks), media_type="text/event-stream")
    body = chat_completion(answer) if request.dialect == "chat" else response_object(answer)
    return json_reply(200, body)


def _model_of(request: ModelRequest, default: str) -> str:
    model = request.body.get("model")
    return model if isinstance(model, str) and model else default


class _ScriptedBase:
    """Shared by the two offline upstreams: nothing to open, answers from the step engine."""

    def __init__(self, model: str = "policy") -> None:
        self.model = model
        self._runner = ScriptRunner()

    async def open(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class ScriptedUpstream(_ScriptedBase):
    """One script for every rollout (conformance scenarios); each rollout keeps its own budgets."""

    def __init__(self, steps: Sequence[Step], model: str = "policy") -> None:
        super().__init__(model)
        self._script = compile_script(steps)

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        rollout = request.rollout_id or ""
        model = _model_of(request, self.model)
        answer = self._runner.answer(self._script, rollout, request.dialect, request.body, model)
        return render_reply(answer, request)


class ReferenceUpstream(_ScriptedBase):
    """Each rollout answered from its own script (a benchmark's reference solution)."""

    def __init__(self, model: str = "policy") -> None:
        super().__init__(model)
        self._scripts: dict[str, tuple] = {}

    def set_script(self, rollout_id: str, steps: Sequence[Step]) -> None:
        """(Re)script a rollout; a re-scripted rollout starts afresh."""
        self._scripts[rollout_id] = compile_script(steps)
        self._runner.forget(rollout_id)

    def drop_script(self, rollout_id: str) -> None:
        """Forget a finished rollout's script and its budgets: a long run's gateway would
        otherwise hold every rollout's for its whole life. A call under it then finds none."""
        self._scripts.pop(rollout_id, None)
        self._runner.forget(rollout_id)

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        script = self._scripts.get(request.rollout_id or "")
        if script is None:
            where = request.rollout_id or "an unprefixed call"
            return error_reply(
                404,
                f"no reference script for rollout {where!r}: call set_reference_script "
                "first and use url_for(rollout_id) as the agent's base URL",
                "not_found_error",
            )
        model = _model_of(request, self.model)
        answer = self._runner.answer(
            script, request.rollout_id or "", request.dialect, request.body, model
        )
        return render_reply(answer, request)


class OpenAIUpstream:
    """Forwards to any OpenAI-compatible server (vLLM, NIM, OpenAI).

    The API key is read from the named environment variable when the gateway starts and is
    sent only to that server: it is never logged and never reaches the capture (which records
    bodies, not headers). Streams are passed through as they arrive. An answer is read as the
    server sent it (asked for no content coding, so a compressed bomb cannot expand past the
    cap) and fails as ``answer_too_large`` once it passes ``max_answer_bytes``.
    """

    def __init__(
        self,
        base_url: str,
        api_key_env: str,
        model: str | None = None,
        timeout: float = 600.0,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.max_answer_bytes = max_answer_bytes
        self.api_key_env = api_key_env
        self.model = model  # replaces the agent's model id when set
        self.timeout = timeout
        self._client: httpx2.AsyncClient | None = None

    async def open(self) -> None:
        key = os.environ.get(self.api_key_env)
        if not key:
            raise RuntimeError(
                f"environment variable {self.api_key_env} is not set; it must hold the API key "
                f"for the model server at {self.base_url}"
            )
        self._client = httpx2.AsyncClient(
            base_url=self.base_url,
            timeout=self.timeout,
            headers={"authorization": f"Bearer {key}"},
            limits=httpx2.Limits(max_connections=None, max_keepalive_connections=256),
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def status_of(self, route: str) -> int:
        """The HTTP status a POST of an empty object to ``route`` gets: a cheap question a
        server answers from its routing (404 for a route it lacks) without running a model."""
        if self._client is None:
            raise RuntimeError("OpenAIUpstream.status_of before open()")
        response = await self._client.post(
            route, content=b"{}", headers={"content-type": "application/json"}
        )
        return response.status_code

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        if self._client is None:
            raise RuntimeError("OpenAIUpstream.answer before open()")
        body = request.body if self.model is None else {**request.body, "model": self.model}
        http_request = self._client.build_request(
            "POST",
            ROUTES[request.dialect],
            content=orjson.dumps(body),
            headers={"content-type": "application/json", "accept-encoding": "identity"},
        )
        try:
            response = await self._client.send(http_request, stream=True)
        except httpx2.TimeoutException as exc:
            raise UpstreamFailure("timeout", f"model server timed out: {exc!r}") from exc
        except httpx2.NetworkError as exc:
            raise UpstreamFailure("connection", f"model server unreachable: {exc!r}") from exc
        except httpx2.HTTPError as exc:
            raise UpstreamFailure("exception", f"model server request failed: {exc!r}") from exc
        media_type = response.headers.get("content-type", "application/json")
        coding = response.headers.get("content-encoding", "identity")
        if coding != "identity":
            await response.aclose()
            raise UpstreamFailure(
                "upstream_error", f"model server sent a {coding!r}-coded answer, asked for none"
            )
        if response.status_code < 400 and media_type.startswith("text/event-stream"):
            stream = _relay(response, self.max_answer_bytes)
            return UpstreamReply(
                response.status_code, stream=stream, media_type="text/event-stream"
            )
        try:
            content = await read_capped(
                response.aiter_raw(),
                self.max_answer_bytes,
                "model server's answer",
                declared_length(response.headers),
            )
        except BodyTooLarge as exc:
            raise UpstreamFailure(ANSWER_TOO_LARGE, str(exc)) from None
        except httpx2.HTTPError as exc:
            raise UpstreamFailure("connection", f"model server dropped the reply: {exc!r}") from exc
        finally:
            await response.aclose()
        if response.status_code >= 400:
            return _upstream_error(response.status_code, content)
        return UpstreamReply(response.status_code, content, media_type=media_type)


async def close_stream(stream: AsyncIterator[bytes]) -> None:
    """Let go of a stream left before its end (an upstream's: its connection with it)."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()


def _upstream_error(status: int, content: bytes) -> UpstreamReply:
    """Pass an OpenAI-shaped error through; wrap anything else in one."""
    try:
        parsed = orjson.loads(content)
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
        return UpstreamReply(status, content, parsed)
    text = content.decode("utf-8", "replace")[:500] or f"HTTP {status}"
    return error_reply(status, f"model server error: {text}", "upstream_error")


async def _relay(response: httpx2.Response, limit: int) -> AsyncIterator[bytes]:
    """The upstream's stream as it arrives; a broken connection raises ``StreamBroken``, one
    past ``limit`` fails."""
    try:
        async for chunk in capped(response.aiter_raw(), limit, "model server's answer"):
            yield chunk
    except BodyTooLarge as exc:
        raise UpstreamFailure(ANSWER_TOO_LARGE, str(exc)) from None
    except httpx2.HTTPError as exc:
        raise StreamBroken(type(exc).__name__) from exc
    finally:
        await response.aclose()
