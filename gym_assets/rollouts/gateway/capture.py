"""Per-rollout model-call capture: one JSON line per exchange, and the attachment built from it.

Writing: each exchange, success or failure, is appended to
``<capture_dir>/<rollout_id>.capture.jsonl`` and fsync'd. In this process a file is written by
one thread at a time, in arrival order, so lines never interleave; an exclusive ``flock`` on
the file keeps another process appending to the same file from interleaving with it. When a
line cannot be written (an invalid exchange, or a failed write, which is cut back to the last
whole line), or is written without its payloads because it is over the line cap, the empty
marker ``<rollout_id>.capture.incomplete`` is left, so a reader knows the file under-reports
rather than trusting it. Only a crash in the middle of a write can
leave a torn last line; the reader counts it as unreadable. Lines hold bodies only, never
request headers: the ``authorization`` header cannot reach a capture.

Reading: :func:`read_capture` turns the file into the ``ng_model_call_capture``
attachment, with provider token usage normalised and capture gaps named.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import queue
import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from gym_assets.fileio import write_all
from gym_assets.records.evidence import (
    CaptureExchange,
    GapCode,
    ModelCallCapture,
    ModelCallRecord,
    ObservationGap,
)
from gym_assets.redaction import NOTHING, Redactor
from gym_assets.rollouts.gateway.bodies import DEFAULT_LIMITS
from gym_assets.rollouts.gateway.sse import StreamAssembler

log = logging.getLogger(__name__)

CAPTURE_SUFFIX = ".capture.jsonl"
INCOMPLETE_SUFFIX = ".capture.incomplete"
SESSION_HEADERS = ("x-session-id", "session-id", "session_id")
WRITER_THREADS = 8  # files written and fsync'd at once (the disk's journal commits them together)

_STATUS_CATEGORIES = {408: "timeout", 504: "timeout", 429: "rate_limit", 401: "auth", 403: "auth"}
_STREAM_CATEGORIES = {"error": "upstream_error", "incomplete": "incomplete"}
_PAYLOADS = ("request", "response", "request_raw", "response_raw")
_UPSTREAM_PAYLOADS = ("request", "response", "response_raw")


def capture_path(capture_dir: Path, rollout_id: str) -> Path:
    return capture_dir / f"{rollout_id}{CAPTURE_SUFFIX}"


def incomplete_marker(capture_dir: Path, rollout_id: str) -> Path:
    return capture_dir / f"{rollout_id}{INCOMPLETE_SUFFIX}"


# --------------------------------------------------------------------------- error_category


def status_category(status: int) -> str | None:
    """The ``error_category`` of an HTTP status; ``None`` below 400."""
    if status < 400:
        return None
    if status in _STATUS_CATEGORIES:
        return _STATUS_CATEGORIES[status]
    if status == 404:
        return "not_found"
    return "client_error" if status < 500 else "upstream_error"


def stream_category(stream: StreamAssembler) -> str | None:
    """How a 2xx stream ended: a terminal error or incomplete event, no terminal event at all
    (truncated), or a complete stream with pieces that could not be parsed."""
    if stream.ended is None:
        return "stream_truncated"
    if stream.ended in _STREAM_CATEGORIES:
        return _STREAM_CATEGORIES[stream.ended]
    return "capture_parse_error" if stream.unparseable else None


def answered(call: Mapping[str, Any]) -> bool:
    """Whether a captured call got a usable answer (a 2xx that ended well)."""
    status = call.get("status_code")
    return isinstance(status, int) and 200 <= status < 300 and call.get("error_category") is None


def client_session_id(headers: Mapping[str, str]) -> str | None:
    for name in SESSION_HEADERS:
        value = headers.get(name)
        if value:
            return value
    return None


# --------------------------------------------------------------------------- writing


def _encode(fields: Mapping[str, Any]) -> bytes:
    """One JSON line; validated fields hold only JSON data, so they are encoded as given."""
    try:
        return orjson.dumps(fields) + b"\n"
    except TypeError:  # integers beyond 64 bits in a payload: the stdlib encoder takes them
        return json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _without_payloads(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A line's fields with every body left out, the model server's side's too."""
    upstream = fields.get("upstream")
    if isinstance(upstream, Mapping):
        upstream = {**upstream, **dict.fromkeys(_UPSTREAM_PAYLOADS)}
    return {**fields, **dict.fromkeys(_PAYLOADS), "upstream": upstream}


_Done = Future[bool] | asyncio.Future[bool]  # how a line's writer learns it is on disk


class _Waiters:
    """The lines an event loop awaits. A writer thread hands over each file's results as the
    file is written, and the loop takes all that arrived since its last turn in one call: one
    wake-up (a write to its self-pipe, a turn of the loop) for many lines while the loop is
    busy, and no wait when it is idle."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._arrived: list[tuple[asyncio.Future[bool], bool]] = []

    def settle(self, lines: list[tuple[asyncio.Future[bool], bool]]) -> None:
        with self._lock:
            wake = not self._arrived  # else a call is on its way and takes these too
            self._arrived.extend(lines)
        if wake:
            try:
                self._loop.call_soon_threadsafe(self._take)
            except RuntimeError:  # the loop has closed: nobody waits any more
                with self._lock:
                    self._arrived.clear()

    def _take(self) -> None:
        with self._lock:
            arrived, self._arrived = self._arrived, []
        for done, ok in arrived:
            if not done.done():  # a waiter that gave up cancelled its future
                done.set_result(ok)


class CaptureWriter:
    """Writes capture lines in background threads, in batches, each file in arrival order.

    Syscalls and fsync are slow next to answering a request, so callers only validate and
    encode a line and queue it. The writer thread takes everything queued meanwhile and hands
    each file's lines to a small pool, which opens the file once, writes the lines, fsyncs and
    closes it. The fsyncs of different files overlap, which is what lets a thousand rollouts in
    flight be captured: one after another, this machine's disk syncs about 600 files a second,
    four at a time over 7,000. The next batch starts once this one is done, so a file's lines
    keep their order. Each line's future resolves once the line is on disk, or once writing it
    failed (the gateway answers the client only then); an event loop's futures
    (``append_async``) resolve together, a turn of the loop for all that finished since its
    last one. A waiter that gave up (its future cancelled) is skipped, never fatal to the
    writer.
    """

    def __init__(
        self,
        capture_dir: Path,
        redactor: Redactor = NOTHING,
        max_line_bytes: int = DEFAULT_LIMITS.capture_line_bytes,
    ) -> None:
        self.capture_dir = capture_dir
        self._redactor = redactor
        self.max_line_bytes = max_line_bytes
        self._queue: queue.SimpleQueue[tuple[str, bytes, _Done] | None] = queue.SimpleQueue()
        try:
            capture_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # every write will fail and leave its marker
            log.error("cannot create capture dir %s: %s", capture_dir, exc.strerror)
        self._pool = ThreadPoolExecutor(WRITER_THREADS, thread_name_prefix="capture-write")
        self._waiters: dict[asyncio.AbstractEventLoop, _Waiters] = {}  # added on their loops
        self._thread = threading.Thread(target=self._write_loop, name="capture-writer", daemon=True)
        self._thread.start()

    def append(self, rollout_id: str, fields: Mapping[str, Any]) -> Future[bool]:
        """Queue one exchange; the future says whether it reached the disk. On failure the
        incomplete marker is left and the future holds False. A line over ``max_line_bytes``
        (payloads whose JSON escaping outgrew the body caps) keeps everything but its payloads,
        and leaves the marker too."""
        done: Future[bool] = Future()
        self._queue_line(rollout_id, fields, done)
        return done

    def append_async(self, rollout_id: str, fields: Mapping[str, Any]) -> asyncio.Future[bool]:
        """``append`` for a caller on an event loop: the lines written while the loop is busy
        are settled with one wake-up of it, not one each (``_Waiters``)."""
        loop = asyncio.get_running_loop()
        if loop not in self._waiters:
            self._waiters[loop] = _Waiters(loop)
        done: asyncio.Future[bool] = loop.create_future()
        self._queue_line(rollout_id, fields, done)
        return done

    def _queue_line(self, rollout_id: str, fields: Mapping[str, Any], done: _Done) -> None:
        try:
            CaptureExchange.model_validate(fields)
            data = _encode(fields)
            if len(data) > self.max_line_bytes:
                log.error(
                    "capture line for rollout %s is over the cap: payloads left out", rollout_id
                )
                self._mark_incomplete(rollout_id)
                data = _encode(_without_payloads(fields))
            data = self._redactor.data(data)
        except ValueError as exc:  # a ValidationError, or an unencodable payload
            log.error("capture line for rollout %s is invalid: %s", rollout_id, type(exc).__name__)
            self._mark_incomplete(rollout_id)
            done.set_result(False)  # on the caller's thread
            return
        self._queue.put((rollout_id, data, done))

    def close(self) -> None:
        """Wait until every line queued so far is on disk, then stop the writer threads."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._pool.shutdown()

    def _write_loop(self) -> None:
        running = True
        while running:
            batch = [self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get())
            running = None not in batch
            by_file: dict[str, list[tuple[bytes, _Done]]] = {}
            for rollout_id, data, done in filter(None, batch):
                by_file.setdefault(rollout_id, []).append((data, done))
            for _ in self._pool.map(self._write_lines, by_file.items()):
                pass  # the batch is done when every file is

    def _write_lines(self, lines_of_file: tuple[str, list[tuple[bytes, _Done]]]) -> None:
        rollout_id, lines = lines_of_file
        ok = self._write(rollout_id, b"".join(data for data, _ in lines))
        on_loops: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[bool], bool]]] = {}
        for _, done in lines:
            if isinstance(done, asyncio.Future):
                on_loops.setdefault(done.get_loop(), []).append((done, ok))
            elif done.set_running_or_notify_cancel():  # False: its waiter cancelled it
                done.set_result(ok)
        for loop, waiting in on_loops.items():
            self._waiters[loop].settle(waiting)

    def _write(self, rollout_id: str, data: bytes) -> bool:
        try:
            path = capture_path(self.capture_dir, rollout_id)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # against other processes appending
                whole = os.fstat(fd).st_size  # the file ends after a whole line here
                try:
                    write_all(fd, data)
                    os.fsync(fd)
                except OSError:
                    os.ftruncate(fd, whole)  # no part of a batch that did not reach the disk
                    raise
            finally:
                os.close(fd)  # closing releases the flock
            return True
        except OSError as exc:
            log.error("capture write failed for rollout %s: %s", rollout_id, exc.strerror)
            self._mark_incomplete(rollout_id)
            return False

    def _mark_incomplete(self, rollout_id: str) -> None:
        try:
            incomplete_marker(self.capture_dir, rollout_id).touch()
        except OSError as exc:
            log.error("cannot mark capture of rollout %s incomplete: %s", rollout_id, exc.strerror)


# --------------------------------------------------------------------------- reading


def _count(value: Any) -> int | None:
    """Only non-negative integers are token counts; anything else is unknown, never zero."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _first(*values: Any) -> int | None:
    for value in values:
        if (count := _count(value)) is not None:
            return count
    return None


def _detail(usage: Mapping[str, Any], details: tuple[str, ...], key: str) -> tuple[Any, ...]:
    found = (usage.get(name) for name in details)
    return tuple(d.get(key) for d in found if isinstance(d, Mapping))


def normalise_usage(usage: Any) -> dict[str, int | None]:
    """Provider usage (Chat, Responses or Anthropic style) as the record's token fields."""
    if not isinstance(usage, Mapping):
        usage = {}
    prompt = _first(usage.get("input_tokens"), usage.get("prompt_tokens"))
    if prompt is not None:
        prompt += sum(
            _count(usage.get(k)) or 0
            for k in ("cache_read_input_tokens", "cache_creation_input_tokens")
        )
    completion = _first(usage.get("output_tokens"), usage.get("completion_tokens"))
    total = _count(usage.get("total_tokens"))
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    output_details = ("output_tokens_details", "completion_tokens_details")
    input_details = ("input_tokens_details", "prompt_tokens_details")
    return {
        "tokens_in": prompt,
        "tokens_out": completion,
        "tokens_total": total,
        "tokens_reasoning": _first(
            *_detail(usage, output_details, "reasoning_tokens"),
            usage.get("reasoning_output_tokens"),
        ),
        "cached_tokens": _first(
            *_detail(usage, input_details, "cached_tokens"),
            usage.get("cached_input_tokens"),
            usage.get("cache_read_input_tokens"),
        ),
        "cache_creation_tokens": _count(usage.get("cache_creation_input_tokens")),
    }


def _chat_message(response: Mapping[str, Any]) -> Mapping[str, Any]:
    choices = response.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, Mapping) else None
    return message if isinstance(message, Mapping) else {}


def _finish_reason(response: Mapping[str, Any]) -> str | None:
    choices = response.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    details = response.get("incomplete_details")
    for value in (
        response.get("stop_reason"),
        choice.get("finish_reason") if isinstance(choice, Mapping) else None,
        details.get("reason") if isinstance(details, Mapping) else None,
    ):
        if isinstance(value, str):
            return value
    return None


def _tool_calls_and_reasoning(
    dialect: str, response: Mapping[str, Any]
) -> tuple[list[Any], str | None]:
    if dialect == "chat":
        message = _chat_message(response)
        calls = message.get("tool_calls")
        reasoning = message.get("reasoning_content", message.get("reasoning"))
        return (calls if isinstance(calls, list) else []), (
            reasoning if isinstance(reasoning, str) else None
        )
    output = response.get("output")
    items = [i for i in output if isinstance(i, Mapping)] if isinstance(output, list) else []
    calls = [i for i in items if i.get("type") == "function_call"]
    texts = [
        part["text"]
        for item in items
        if item.get("type") == "reasoning"
        for key in ("summary", "content")
        for part in (item[key] if isinstance(item.get(key), list) else ())
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
    ]
    return calls, ("\n".join(texts) if texts else None)


def to_record(exchange: CaptureExchange, index: int, *, include_payloads: bool) -> ModelCallRecord:
    response = exchange.response or {}
    request = exchange.request or {}
    tokens = normalise_usage(response.get("usage"))
    calls, reasoning = _tool_calls_and_reasoning(exchange.dialect, response)
    model = response.get("model", request.get("model"))
    response_id = response.get("id")
    status = response.get("status")
    payloads = include_payloads
    answered = exchange.response is not None and (exchange.status_code or 0) < 400
    return ModelCallRecord(
        model_call_id=exchange.model_call_id,
        response_id=response_id if isinstance(response_id, str) else None,
        call_index=index,
        model_ref=exchange.model_ref,
        model=model if isinstance(model, str) else None,
        dialect=exchange.dialect,
        status_code=exchange.status_code,
        response_status=status if isinstance(status, str) else None,
        finish_reason=_finish_reason(response),
        started_at=exchange.started_at,
        completed_at=exchange.completed_at,
        **tokens,
        request=exchange.request if payloads else None,
        response=exchange.response if payloads else None,
        request_raw=exchange.request_raw if payloads else None,
        response_raw=exchange.response_raw if payloads else None,
        tool_calls=calls if answered else None,
        reasoning_content=reasoning,
        cache_hit=None if tokens["cached_tokens"] is None else tokens["cached_tokens"] > 0,
        error_category=exchange.error_category,
        latency_total_ms=exchange.latency_ms,
        latency_ttft_ms=exchange.latency_ttft_ms,
        client_session_id=exchange.client_session_id,
        upstream=exchange.upstream
        if payloads or exchange.upstream is None
        else exchange.upstream.model_copy(update=dict.fromkeys(_UPSTREAM_PAYLOADS)),
    )


def _sum(records: list[ModelCallRecord], field: str) -> int | None:
    values = [getattr(r, field) for r in records if getattr(r, field) is not None]
    return sum(values) if values else None


def _metrics(records: list[ModelCallRecord]) -> dict[str, Any]:
    failed = sum(1 for r in records if r.error_category is not None)
    return {
        "model_calls": len(records),
        "failed_model_calls": failed,
        "tokens_in": _sum(records, "tokens_in"),
        "tokens_out": _sum(records, "tokens_out"),
        "tokens_total": _sum(records, "tokens_total"),
    }


def read_capture(capture_dir: Path, rollout_id: str, *, include_payloads: bool = True) -> dict:
    """The ``ng_model_call_capture`` attachment of one rollout (validated, as JSON data).

    Unreadable lines are skipped and counted in a gap rather than failing the rollout: the
    capture is provenance, and what could be read is still worth keeping.
    """
    capture_dir = Path(capture_dir)
    gaps: list[ObservationGap] = []
    records: list[ModelCallRecord] = []
    path = capture_path(capture_dir, rollout_id)
    try:
        lines = path.read_bytes().splitlines()
    except FileNotFoundError:  # nothing captured (no exists() first: a lookup in a busy dir)
        lines = []
    except OSError as exc:
        lines = []
        gaps.append(
            ObservationGap(code=GapCode.MODEL_CALL_CAPTURE_UNREADABLE.value, detail=exc.strerror)
        )
    unreadable = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            exchange = CaptureExchange.model_validate(orjson.loads(line))
        except (orjson.JSONDecodeError, ValidationError):
            unreadable += 1
            continue
        records.append(to_record(exchange, len(records), include_payloads=include_payloads))
    if unreadable:
        gaps.append(
            ObservationGap(
                code=GapCode.MODEL_CALL_CAPTURE_RECORDS_UNREADABLE.value,
                detail=f"count={unreadable}",
            )
        )
    if incomplete_marker(capture_dir, rollout_id).exists():
        gaps.append(ObservationGap(code=GapCode.MODEL_CALL_CAPTURE_INCOMPLETE.value))
    if not records and not any(g.code == GapCode.MODEL_CALL_CAPTURE_UNREADABLE for g in gaps):
        gaps.append(ObservationGap(code=GapCode.MODEL_CALL_CAPTURE_NO_RECORDS.value))
    attachment = ModelCallCapture(
        rollout_id=rollout_id, metrics=_metrics(records), calls=records, gaps=gaps
    )
    return attachment.model_dump(mode="json")
