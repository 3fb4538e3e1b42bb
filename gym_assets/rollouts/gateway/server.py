"""The model gateway: an OpenAI-compatible HTTP server on loopback that captures per rollout.

Routes (JSON, or SSE when the body says ``"stream": true``)::

    POST /v1/chat/completions     POST /v1/responses     GET /v1/models
    ... and the same under /ng-rollout/<rollout_id>/<token>/
    and under /ng-rollout/<rollout_id>/invocation/<invocation_id>/<token>/

Only prefixed calls are captured (one line per exchange in
``<capture_dir>/<rollout_id>.capture.jsonl``); unprefixed calls are answered but not recorded,
which is what probes and health checks want. Agents therefore always get
``url_for(rollout_id)`` as their base URL; its token (``capabilities``) is what lets a call
write into that rollout's capture, and a call under the prefix without it is refused and
logged. Request and answer bodies are capped while they stream (``bodies``).

The server is Starlette on uvicorn, running in a background thread with its own event loop,
so synchronous callers (collection, tests, the CLI) can start and stop it like an object.
Capture lines are appended on the event loop and fsync'd in batches by the capture writer's
thread; a reply is sent only after its line is durable (or its write failed and left the
incomplete marker), so a finished episode's capture is settled when the agent sees the answer.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import threading
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from gym_assets.records.contracts import GATEWAY_KEEP_ALIVE_S, Step
from gym_assets.records.evidence import ModelRef
from gym_assets.records.ids import ROLLOUT_ID_PATTERN, is_rollout_id
from gym_assets.redaction import NOTHING, Redactor
from gym_assets.rollouts.gateway.bodies import (
    ANSWER_TOO_LARGE,
    DEFAULT_LIMITS,
    REQUEST_TOO_LARGE,
    BodyLimits,
    BodyTooLarge,
    declared_length,
    read_capped,
)
from gym_assets.rollouts.gateway.capabilities import (
    INVOCATION_PREFIX,
    ROLLOUT_PREFIX,
    CapabilityPaths,
    check_id,
    new_key,
)
from gym_assets.rollouts.gateway.capture import (
    CaptureWriter,
    client_session_id,
    status_category,
    stream_category,
)
from gym_assets.rollouts.gateway.ids import new_id
from gym_assets.rollouts.gateway.render import error_event
from gym_assets.rollouts.gateway.script import Dialect, ErrorReply
from gym_assets.rollouts.gateway.sse import StreamAssembler
from gym_assets.rollouts.gateway.upstreams import (
    ModelRequest,
    ReferenceUpstream,
    StreamBroken,
    Upstream,
    UpstreamFailure,
    UpstreamLeg,
    UpstreamReply,
    close_stream,
    error_reply,
)

log = logging.getLogger(__name__)

START_TIMEOUT_S = 15.0
STOP_GRACE_S = 5
# Failures with no upstream HTTP answer: what the client is told.
_FAILURE_STATUS = {"timeout": 504, "connection": 502}
# Sending the same body again cannot make it smaller; the openai SDKs honour this header.
_NO_RETRY = {"x-should-retry": "false"}
_LOGGED_CHARS = 120  # of a refused rollout id in the log
_LOGGED_REFUSALS = 100  # refused calls logged one by one; past it they are only counted


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status, headers, media_type="application/json")


def _error(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> Response:
    return _json(status, ErrorReply(status, message, kind).body(), headers)


class _Exchange:
    """What the capture needs to know about one exchange while it is under way."""

    __slots__ = (
        "dialect",
        "request",
        "request_raw",
        "session",
        "started",
        "t0",
        "ttft",
        "upstream",
    )

    def __init__(
        self, dialect: Dialect, raw: bytes | None, request: dict | None, session: str | None
    ):
        self.dialect: Dialect = dialect
        self.request = request
        self.request_raw = (
            None if request is not None or raw is None else raw.decode("utf-8", "replace")
        )
        self.session = session
        self.started = time.time()
        self.t0 = time.perf_counter()
        self.ttft: float | None = None
        self.upstream: UpstreamLeg | None = None  # the model server's side, when translated

    def category(self, own: str | None) -> str | None:
        """The call's error_category: how the model server's answer ended, when a translation
        stands between it and the agent, else how the agent's answer ended."""
        return (self.upstream.category if self.upstream else None) or own


class ModelGateway:
    """A running OpenAI-compatible endpoint; implements ``contracts.GatewayHandle``."""

    def __init__(
        self,
        upstream: Upstream,
        capture_dir: Path | str,
        *,
        model_name: str = "policy",
        model_server_name: str = "policy_model",
        host: str = "127.0.0.1",
        port: int = 0,
        redactor: Redactor = NOTHING,
        limits: BodyLimits = DEFAULT_LIMITS,
        path_key: str | None = None,
    ) -> None:
        """``path_key`` makes the capability tokens (a fresh one by default); a gateway in
        another process is given its parent's, so both make the same URLs."""
        if not ipaddress.ip_address(host).is_loopback:
            raise ValueError(f"the model gateway binds loopback only, not {host!r}")
        self.upstream = upstream
        self.capture_dir = Path(capture_dir)
        self.model_name = model_name
        self.model_server_name = model_server_name
        self.host = host
        self.port = port
        self.limits = limits
        self.paths = CapabilityPaths(path_key or new_key())
        self.refusals = 0  # calls on URLs the gateway did not give out
        self.origin = ""
        self._model_ref = ModelRef(name=model_server_name).model_dump()
        self._redactor = redactor  # the capture never holds a secret an upstream echoed
        self._writer: CaptureWriter | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self.app = self._build_app()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> str:
        """Bind, serve in a background thread, and return the uncaptured base URL (``.../v1``)."""
        if self._thread is not None:
            raise RuntimeError("the gateway is already started")
        self._writer = CaptureWriter(
            self.capture_dir, self._redactor, self.limits.capture_line_bytes
        )
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say TCP, and
        # without it Nagle + delayed ACK add 40 ms to every keep-alive answer.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        host = f"[{self.host}]" if family == socket.AF_INET6 else self.host
        self.origin = f"http://{host}:{self.port}"
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            log_config=None,  # uvicorn's lines reach the program's handlers (and redaction)
            access_log=False,
            lifespan="off",
            ws="none",
            timeout_graceful_shutdown=STOP_GRACE_S,  # a stream still open does not hold stop()
            timeout_keep_alive=GATEWAY_KEEP_ALIVE_S,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._run, args=(sock,), name=f"model-gateway-{self.port}", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S):
            self.stop()
            raise RuntimeError(f"the model gateway did not start within {START_TIMEOUT_S} s")
        if self._startup_error is not None:
            self.stop()
            raise self._startup_error
        return f"{self.origin}/v1"

    def _run(self, sock: socket.socket) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._serve(sock))
        finally:
            loop.close()
            sock.close()

    async def _serve(self, sock: socket.socket) -> None:
        assert self._server is not None
        try:
            await self.upstream.open()
        except BaseException as exc:
            self._startup_error = exc
            self._ready.set()
            return
        try:
            serving = asyncio.create_task(self._server.serve(sockets=[sock]))
            while not self._server.started and not serving.done():
                await asyncio.sleep(0.002)
            if serving.done() and not self._server.started:
                self._startup_error = serving.exception() or RuntimeError("server did not start")
            self._ready.set()
            await serving
        finally:
            await self.upstream.aclose()

    def stop(self) -> None:
        """Stop serving, close the upstream and wait for pending capture writes."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(START_TIMEOUT_S)
        if self._writer is not None:
            self._writer.close()
        if self.refusals > _LOGGED_REFUSALS:
            log.warning("refused %d calls on URLs the gateway did not give out", self.refusals)
        self._server = self._thread = self._writer = None

    def __enter__(self) -> ModelGateway:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ GatewayHandle

    def url_for(self, rollout_id: str, invocation_id: str | None = None) -> str:
        return self.paths.url(self.origin, rollout_id, invocation_id)

    def set_reference_script(self, rollout_id: str, steps: Sequence[Step]) -> None:
        check_id(rollout_id)
        if not isinstance(self.upstream, ReferenceUpstream):
            raise TypeError(
                f"set_reference_script needs a ReferenceUpstream; this gateway answers from "
                f"{type(self.upstream).__name__}"
            )
        self.upstream.set_script(rollout_id, steps)

    def drop_reference_script(self, rollout_id: str) -> None:
        """The rollout is over: its script (``reference`` upstream) is no longer needed."""
        if isinstance(self.upstream, ReferenceUpstream):
            self.upstream.drop_script(rollout_id)

    # ------------------------------------------------------------------ HTTP

    def _build_app(self) -> Starlette:
        routes = []
        rollout = ROLLOUT_PREFIX + "/{rollout_id}"
        invocation = rollout + INVOCATION_PREFIX + "/{invocation_id}"
        for prefix in ("", rollout + "/{token}", invocation + "/{token}"):
            routes += [
                Route(prefix + "/v1/chat/completions", self._chat, methods=["POST"]),
                Route(prefix + "/v1/responses", self._responses, methods=["POST"]),
                Route(prefix + "/v1/models", self._models, methods=["GET"]),
            ]
        # Any other call under the prefix (no token, a guessed layout) is an attempt too.
        routes.append(Route(ROLLOUT_PREFIX + "/{rest:path}", self._off_path, methods=["POST"]))
        return Starlette(routes=routes, exception_handlers={HTTPException: _http_error})

    def _refused_path(self, request: Request) -> Response | None:
        """A 400 for an id in the URL that ids may not look like; a 403, logged, for a
        path whose token is not the one this gateway made for its ids."""
        params = request.path_params
        for key in ("rollout_id", "invocation_id"):
            value = params.get(key)
            if value is not None and not is_rollout_id(value):
                return _bad_rollout_id(value)
        rollout_id = params.get("rollout_id")
        if rollout_id is None or self.paths.allows(
            rollout_id, params.get("invocation_id"), params["token"]
        ):
            return None
        why = "its path does not carry the token this gateway gave that rollout"
        return self._refuse(403, rollout_id, why, "permission_error")

    async def _off_path(self, request: Request) -> Response:
        rollout_id = request.path_params["rest"].partition("/")[0]  # the rest may hold a token
        return self._refuse(404, rollout_id, "not a URL the gateway gave out", "not_found_error")

    def _refuse(self, status: int, rollout_id: str, why: str, kind: str) -> Response:
        """Refuse a call on a URL the gateway did not give out, logged as an attempt on that
        rollout (never with a token: the caller's own would be a valid one); a flood of them
        is logged up to a bound, then counted."""
        self.refusals += 1
        if self.refusals <= _LOGGED_REFUSALS:
            log.warning("refused a call on rollout %.*r: %s", _LOGGED_CHARS, rollout_id, why)
        if self.refusals == _LOGGED_REFUSALS:
            log.warning("further refused calls are counted, not logged; the total comes at stop")
        return _error(status, "this URL is not one the gateway gave out", kind)

    async def _models(self, request: Request) -> Response:
        if (refused := self._refused_path(request)) is not None:
            return refused
        model = {"id": self.model_name, "object": "model", "created": 0, "owned_by": "gym_assets"}
        return _json(200, {"object": "list", "data": [model]})

    async def _chat(self, request: Request) -> Response:
        return await self._model_call(request, "chat")

    async def _responses(self, request: Request) -> Response:
        return await self._model_call(request, "responses")

    async def _model_call(self, request: Request, dialect: Dialect) -> Response:
        if (refused := self._refused_path(request)) is not None:
            return refused
        rollout_id = request.path_params.get("rollout_id")
        # A per-invocation URL names the session itself; else the client's session header.
        session = request.path_params.get("invocation_id") or client_session_id(request.headers)
        limit = self.limits.request_bytes
        try:
            raw = await read_capped(
                request.stream(), limit, "request body", declared_length(request.headers)
            )
        except BodyTooLarge as exc:
            if rollout_id is not None:
                exchange = _Exchange(dialect, None, None, session)
                await self._capture(rollout_id, exchange, 413, REQUEST_TOO_LARGE, None, None)
            return _error(413, str(exc), REQUEST_TOO_LARGE, _NO_RETRY)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        if not isinstance(body, dict):
            body = None
        exchange = _Exchange(dialect, raw, body, session)
        failure: UpstreamFailure | None = None
        if body is None:
            reply = error_reply(
                400, "the request body must be a JSON object", "invalid_request_error"
            )
        else:
            try:
                reply = await self.upstream.answer(ModelRequest(dialect, body, rollout_id))
                exchange.upstream = reply.upstream
            except UpstreamFailure as exc:
                log.warning("model upstream failed (%s): %s", exc.category, exc)
                failure = exc
                exchange.upstream = exc.upstream
            except Exception as exc:
                log.exception("model upstream raised %s", type(exc).__name__)
                failure = UpstreamFailure(
                    "exception", f"gateway upstream error: {type(exc).__name__}"
                )
            if failure is not None:
                status = _FAILURE_STATUS.get(failure.category, 502)
                retry = _NO_RETRY if failure.category == ANSWER_TOO_LARGE else {}
                reply = error_reply(status, str(failure), "upstream_unavailable", retry)
        if reply.stream is not None:
            return StreamingResponse(
                self._relay(rollout_id, exchange, reply),
                reply.status,
                {**reply.headers, "cache-control": "no-cache"},
                media_type=reply.media_type,
            )
        if rollout_id is not None:
            if failure is not None:
                await self._capture(rollout_id, exchange, None, failure.category, None, None)
            else:
                response, response_raw = _parsed(reply)
                category = exchange.category(
                    status_category(reply.status)
                    or ("capture_parse_error" if response is None else None)
                )
                await self._capture(
                    rollout_id, exchange, reply.status, category, response, response_raw
                )
        content = self._redactor.data(reply.content)  # an echoed key never reaches the agent
        return Response(content, reply.status, reply.headers, media_type=reply.media_type)

    async def _relay(
        self, rollout_id: str | None, exchange: _Exchange, reply: UpstreamReply
    ) -> AsyncIterator[bytes]:
        """Pass the stream through, redacted (a key split across chunks too), up to its terminal
        event: the answer is whole there, and how the server then closes the connection (real
        servers often drop it) is none of the agent's business. The capture line is made
        durable just before the terminal event goes out, or before the end of a stream that
        stopped without one, so it is on disk when the client sees the end. A stream the
        upstream fails (one past the answer cap) ends with an error event naming the failure,
        and is captured without payload."""
        assert reply.stream is not None
        stream = StreamAssembler(exchange.dialect)
        redacting = self._redactor.stream()
        failure: UpstreamFailure | None = None
        written = False  # the capture line (only a prefixed call has one)

        def fields() -> tuple:
            if failure is not None:  # like a whole answer that failed: no payload
                return (reply.status, failure.category, None, None)
            category = exchange.category(stream_category(stream))
            return (reply.status, category, stream.result(), stream.raw)

        try:
            try:
                async for chunk in reply.stream:
                    if exchange.ttft is None:
                        exchange.ttft = time.perf_counter()
                    ended = stream.feed(chunk)
                    if ended and not written and rollout_id is not None:
                        written = True
                        await self._capture(rollout_id, exchange, *fields())
                    if relayed := redacting.feed(chunk):
                        yield relayed
                    if ended:
                        break
            except UpstreamFailure as exc:
                log.warning("model upstream failed mid-stream (%s): %s", exc.category, exc)
                failure = exc
            except StreamBroken as exc:
                if not stream.close():
                    log.warning("model server stream broke before its end: %s", exc)
            stream.close()
            if held := redacting.end():
                yield held
            if not written and rollout_id is not None:  # no terminal event: durable first
                written = True
                await self._capture(rollout_id, exchange, *fields())
            if failure is not None:
                yield error_event(exchange.dialect, str(failure), failure.category)
        finally:
            if not written and rollout_id is not None:  # client gone: hand the line off
                self._append(rollout_id, exchange, *fields())
            await close_stream(reply.stream)

    # ------------------------------------------------------------------ capture

    def _append(self, rollout_id: str, exchange: _Exchange, *fields: Any) -> None:
        """Hand the line off without waiting for it (the client is gone)."""
        assert self._writer is not None
        self._writer.append(rollout_id, self._line(exchange, *fields))

    async def _capture(self, rollout_id: str, exchange: _Exchange, *fields: Any) -> None:
        assert self._writer is not None
        await self._writer.append_async(rollout_id, self._line(exchange, *fields))

    def _line(
        self,
        exchange: _Exchange,
        status: int | None,
        category: str | None,
        response: dict | None,
        response_raw: str | None,
    ) -> dict[str, Any]:
        now = time.perf_counter()
        return {
            "model_call_id": new_id("mc"),
            "dialect": exchange.dialect,
            "model_ref": self._model_ref,
            "started_at": exchange.started,
            "completed_at": exchange.started + (now - exchange.t0),
            "latency_ms": (now - exchange.t0) * 1000.0,
            "latency_ttft_ms": None
            if exchange.ttft is None
            else (exchange.ttft - exchange.t0) * 1000.0,
            "status_code": status,
            "error_category": category,
            "request": exchange.request,
            "response": response,
            "request_raw": exchange.request_raw,
            "response_raw": response_raw,
            "client_session_id": exchange.session,
            "upstream": None if exchange.upstream is None else exchange.upstream.fields(),
        }


def _parsed(reply: UpstreamReply) -> tuple[dict | None, str | None]:
    """The reply body as an object, else its text for ``response_raw``."""
    if reply.parsed is not None:
        return reply.parsed, None
    try:
        value = orjson.loads(reply.content)
    except orjson.JSONDecodeError:
        value = None
    if isinstance(value, dict):
        return value, None
    return None, reply.content.decode("utf-8", "replace")


def _bad_rollout_id(rollout_id: str) -> Response:
    return _error(
        400,
        f"rollout id {rollout_id!r} in the URL must match {ROLLOUT_ID_PATTERN.pattern}",
        "invalid_request_error",
    )


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
    return _error(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}", kind)
