"""The agents' model calls on aiohttp: one JSON POST, retried the way the ``openai`` SDK retries.

The bundled agents make one kind of call (a JSON body to the gateway, a JSON object back), and
the SDK's general machinery around it (request options, its ``httpx2`` client, auth hooks, the
transport adapter) cost about 1.0 ms of client CPU a call where aiohttp alone costs 0.3 ms,
more than the rest of a rollout. So the call is made on aiohttp directly, and what the agents'
evidence and failure accounting depend on is kept as the SDK does it:

- the body bytes: compact JSON, UTF-8, no NaN (byte-identical on every retry);
- retries: up to ``max_retries`` after the first attempt, on a connection error, a timeout,
  or HTTP 408, 409, 429 and 5xx, unless the answer's ``x-should-retry`` says otherwise; the
  wait is the answer's ``retry-after-ms`` or ``retry-after`` when that is over 0 and at most
  two minutes (longer: no retry), else 0.5 s doubling per retry up to 8 s, less up to 25%;
- errors: the SDK's own exception classes with its messages (``Error code: 500 - <the
  error's message>``), so a failed call is classified and recorded as before; a connection
  that failed or broke is ``Request timed out.``, as the SDK's aiohttp transport reports it,
  and only a broken answer body is ``Connection error.``.

The timeout bounds connecting (pool wait included) and each read, as the SDK's does.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import aiohttp
import httpx2
import orjson

if TYPE_CHECKING:  # imported only to build a failed call's exception: it costs start-up ~0.4 s
    import openai

RETRYABLE_STATUSES = frozenset({408, 409, 429})
FIRST_WAIT_S, LONGEST_WAIT_S = 0.5, 8.0
LONGEST_RETRY_AFTER_S = 120.0
_INFINITY = ("inf", "+inf", "infinity", "+infinity")  # written out: a wait without end


async def post_json(
    session: aiohttp.ClientSession,
    url: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str],
    *,
    timeout_s: float,
    max_retries: int,
) -> dict[str, Any]:
    """POST ``body`` to ``url``; the answer's JSON object. Raises the SDK's exceptions."""
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    timeout = aiohttp.ClientTimeout(total=None, connect=timeout_s, sock_read=timeout_s)
    retry = 0
    while True:
        try:
            async with session.post(url, data=data, headers=headers, timeout=timeout) as answer:
                status, content = answer.status, await answer.read()
                answer_headers = answer.headers
        except (TimeoutError, aiohttp.ClientError) as exc:
            if retry >= max_retries:
                import openai

                request = httpx2.Request("POST", url)
                if isinstance(exc, TimeoutError | aiohttp.ClientConnectionError):
                    raise openai.APITimeoutError(request) from exc
                raise openai.APIConnectionError(request=request) from exc
            wait = _backoff(retry)
        else:
            if 200 <= status < 300:
                return _object_of(url, status, answer_headers, content)
            delay = _retry_after(answer_headers)
            if retry >= max_retries or not _should_retry(status, answer_headers, delay):
                raise _status_error(url, status, answer_headers, content)
            wait = delay if delay is not None and 0 < delay <= LONGEST_RETRY_AFTER_S else None
            wait = _backoff(retry) if wait is None else wait
        retry += 1
        await asyncio.sleep(wait)


def _backoff(retry: int) -> float:
    """0.5 s doubling per retry up to 8 s, less a random 0–25%."""
    return min(FIRST_WAIT_S * 2.0**retry, LONGEST_WAIT_S) * (1 - 0.25 * random.random())


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait the answer asks for, in seconds (``retry-after-ms``, then ``retry-after`` as
    seconds or an HTTP date); None when it names none."""
    for name, per_second in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            delay = float(value)
        except ValueError:
            continue
        if delay == math.inf and value.strip().lower() not in _INFINITY:
            return LONGEST_RETRY_AFTER_S + 1  # an overflowing number: far too long, no retry
        return delay / per_second
    when = email.utils.parsedate_tz(headers.get("retry-after") or "")
    return None if when is None else float(email.utils.mktime_tz(when) - time.time())


def _should_retry(status: int, headers: Mapping[str, str], delay: float | None) -> bool:
    if delay is not None and math.isfinite(delay) and delay > LONGEST_RETRY_AFTER_S:
        return False
    said = headers.get("x-should-retry")
    if said in ("true", "false"):
        return said == "true"
    return status in RETRYABLE_STATUSES or status >= 500


def _response(url: str, status: int, headers: Mapping[str, str], content: bytes) -> httpx2.Response:
    """The answer as the ``httpx2.Response`` the SDK's exceptions carry."""
    request = httpx2.Request("POST", url)
    return httpx2.Response(status, headers=list(headers.items()), content=content, request=request)


def _status_error(
    url: str, status: int, headers: Mapping[str, str], content: bytes
) -> openai.APIStatusError:
    """The SDK's exception for an error status, its message and ``body`` as the SDK makes them."""
    import openai

    response = _response(url, status, headers, content)
    message = f"Error code: {status}"
    body: object = response.text.strip()
    try:
        body = json.loads(str(body))
    except ValueError:
        pass
    else:
        error = body.get("error", body) if isinstance(body, Mapping) else None
        text = error.get("message") if isinstance(error, Mapping) else None
        if isinstance(text, str) and text:
            message += f" - {text}"
    data = body.get("error", body) if isinstance(body, Mapping) else body
    errors: dict[int, type[openai.APIStatusError]] = {
        400: openai.BadRequestError,
        401: openai.AuthenticationError,
        403: openai.PermissionDeniedError,
        404: openai.NotFoundError,
        409: openai.ConflictError,
        422: openai.UnprocessableEntityError,
        429: openai.RateLimitError,
    }
    kind = errors.get(status, openai.InternalServerError if status >= 500 else None)
    if kind is None:
        return openai.APIStatusError(message, response=response, body=data)
    return kind(message, response=response, body=data)


def _object_of(url: str, status: int, headers: Mapping[str, str], content: bytes) -> dict:
    """A successful answer's JSON object; anything else is the SDK's validation error."""
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        import openai

        response = _response(url, status, headers, content)
        raise openai.APIResponseValidationError(
            response, response.text, message="the model answer is not a JSON object"
        )
    return value
