"""Capture lines per exchange, error categories, retries, the incomplete marker, read_capture."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import threading
import time
from pathlib import Path

import httpx2
import openai
import pytest
from openai import OpenAI

from gym_assets.records.evidence import ModelCallCapture, ModelCallRecord
from gym_assets.rollouts.gateway import ScriptedUpstream, read_capture
from gym_assets.rollouts.gateway.capture import (
    CaptureWriter,
    capture_path,
    incomplete_marker,
    normalise_usage,
    status_category,
)
from gym_assets_tests.rollouts.gateway.conftest import BASH_CHAT_TOOL, capture_lines

USER = [{"role": "user", "content": "hi"}]


def _client(gateway, rollout_id: str, **kw) -> OpenAI:
    return OpenAI(base_url=gateway.url_for(rollout_id), api_key="dummy", **kw)


def test_failures_are_returned_openai_shaped_and_captured(start_gateway, tmp_path: Path) -> None:
    script = [
        {"error": 429, "times": 1},
        {"error": 500, "times": 1},
        {"error": 400, "times": 1, "message": "scripted bad request"},
        {"text": "Done."},
    ]
    client = _client(start_gateway(ScriptedUpstream(script)), "fail-1", max_retries=0)
    expected = [openai.RateLimitError, openai.InternalServerError, openai.BadRequestError]
    for error in expected:
        with pytest.raises(error) as raised:
            client.chat.completions.create(model="policy", messages=USER)
        assert set(raised.value.body) == {"message", "type", "code"}
    assert raised.value.body["message"] == "scripted bad request"
    done = client.chat.completions.create(model="policy", messages=USER)
    assert done.choices[0].message.content == "Done."

    lines = capture_lines(tmp_path / "capture", "fail-1")
    assert [(x["status_code"], x["error_category"]) for x in lines] == [
        (429, "rate_limit"),
        (500, "upstream_error"),
        (400, "client_error"),
        (200, None),
    ]
    assert lines[2]["response"]["error"] == {
        "message": "scripted bad request",
        "type": "scripted_error",
        "code": "400",
    }
    assert all(x["request"]["messages"] == USER for x in lines)
    assert len({x["model_call_id"] for x in lines}) == 4


def test_a_retried_turn_is_answered_idempotently(start_gateway, tmp_path: Path) -> None:
    script = [{"error": 500, "times": 1}, {"tool": "ls"}, {"text": "Done."}]
    client = _client(start_gateway(ScriptedUpstream(script)), "retry-1", max_retries=2)
    first = client.chat.completions.create(model="policy", messages=USER, tools=[BASH_CHAT_TOOL])
    assert first.choices[0].message.tool_calls[0].function.name == "bash"
    # The same turn again (a resend) is turn 0 once more: the same kind of answer.
    again = client.chat.completions.create(model="policy", messages=USER, tools=[BASH_CHAT_TOOL])
    assert again.choices[0].finish_reason == "tool_calls"
    lines = capture_lines(tmp_path / "capture", "retry-1")
    assert [(x["status_code"], x["error_category"]) for x in lines] == [
        (500, "upstream_error"),
        (200, None),
        (200, None),
    ]
    assert lines[0]["request"] == lines[1]["request"]


def test_auxiliary_requests_do_not_spend_the_error_budget(start_gateway, tmp_path: Path) -> None:
    script = [{"error": 500, "times": 1}, {"tool": "ls"}]
    client = _client(start_gateway(ScriptedUpstream(script)), "aux-1", max_retries=0)
    title = client.chat.completions.create(model="policy", messages=USER)  # no tools
    assert title.choices[0].message.content == "OK."
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="policy", messages=USER, tools=[BASH_CHAT_TOOL])
    done = client.chat.completions.create(model="policy", messages=USER, tools=[BASH_CHAT_TOOL])
    assert done.choices[0].finish_reason == "tool_calls"
    assert len(capture_lines(tmp_path / "capture", "aux-1")) == 3


@pytest.mark.parametrize("header", ["x-session-id", "session-id", "session_id"])
def test_client_session_id_comes_from_session_headers(
    start_gateway, tmp_path: Path, header: str
) -> None:
    client = _client(
        start_gateway(ScriptedUpstream([{"text": "hi"}])), "sess", default_headers={header: "inv-7"}
    )
    client.chat.completions.create(model="policy", messages=USER)
    [line] = capture_lines(tmp_path / "capture", "sess")
    assert line["client_session_id"] == "inv-7"


def test_unprefixed_calls_are_answered_but_not_captured(start_gateway, tmp_path: Path) -> None:
    gateway = start_gateway(ScriptedUpstream([{"text": "hi"}]))
    client = OpenAI(base_url=gateway.origin + "/v1", api_key="dummy")
    assert client.chat.completions.create(model="policy", messages=USER).choices
    assert client.responses.create(model="policy", input="hi").output_text == "hi"
    assert list((tmp_path / "capture").iterdir()) == []


def test_bad_rollout_id_and_bad_json_are_400(start_gateway, tmp_path: Path) -> None:
    gateway = start_gateway(ScriptedUpstream([{"text": "hi"}]))
    json_url = gateway.url_for("r-json").removeprefix(gateway.origin)
    with httpx2.Client(base_url=gateway.origin) as http:
        bad_id = http.post("/ng-rollout/-bad/t/v1/chat/completions", json={"messages": USER})
        assert bad_id.status_code == 400
        assert "must match" in bad_id.json()["error"]["message"]
        assert http.get("/ng-rollout/bad%20id/t/v1/models").status_code == 400
        bad_json = http.post(json_url + "/responses", content=b"{not json")
        assert bad_json.status_code == 400 and bad_json.json()["error"]["code"] == "400"
        missing = http.post("/v1/embeddings", json={})
        assert missing.status_code == 404 and "error" in missing.json()
    [line] = capture_lines(tmp_path / "capture", "r-json")
    assert line["request"] is None and line["request_raw"] == "{not json"
    assert (line["status_code"], line["error_category"]) == (400, "client_error")
    assert sorted(p.name for p in (tmp_path / "capture").iterdir()) == ["r-json.capture.jsonl"]


def test_a_flood_of_refused_calls_is_logged_up_to_a_bound_then_counted(
    start_gateway, caplog: pytest.LogCaptureFixture
) -> None:
    gateway = start_gateway(ScriptedUpstream([{"text": "hi"}]))
    guessed = gateway.url_for("r-1").replace("/r-1/", "/r-2/") + "/chat/completions"
    with httpx2.Client() as http:
        statuses = {http.post(guessed, json={"messages": USER}).status_code for _ in range(150)}
    assert statuses == {403}
    gateway.stop()
    logged = [r.getMessage() for r in caplog.records]
    assert sum(m.startswith("refused a call on rollout 'r-2'") for m in logged) == 100
    assert logged[-1] == "refused 150 calls on URLs the gateway did not give out"


@pytest.mark.parametrize(
    ("status", "category"),
    [
        (200, None),
        (408, "timeout"),
        (504, "timeout"),
        (429, "rate_limit"),
        (401, "auth"),
        (403, "auth"),
        (404, "not_found"),
        (422, "client_error"),
        (500, "upstream_error"),
        (503, "upstream_error"),
    ],
)
def test_status_categories(status: int, category: str | None) -> None:
    assert status_category(status) == category


def test_unwritable_capture_file_leaves_the_incomplete_marker(
    start_gateway, tmp_path: Path
) -> None:
    capture_dir = tmp_path / "capture"
    capture_path(capture_dir, "broken").mkdir(parents=True)  # appending to it must fail
    client = _client(start_gateway(ScriptedUpstream([{"text": "hi"}])), "broken")
    assert client.chat.completions.create(model="policy", messages=USER).choices
    assert incomplete_marker(capture_dir, "broken").exists()
    gaps = [g["code"] for g in read_capture(capture_dir, "broken")["gaps"]]
    assert gaps == ["model_call_capture_unreadable", "model_call_capture_incomplete"]


def test_unusable_capture_dir_still_answers_and_logs(
    start_gateway, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    caplog.set_level(logging.ERROR)
    client = _client(start_gateway(ScriptedUpstream([{"text": "hi"}]), not_a_dir), "r1")
    assert client.chat.completions.create(model="policy", messages=USER).choices
    messages = [r.getMessage() for r in caplog.records]
    assert any("capture write failed for rollout r1" in m for m in messages)
    assert any("cannot mark capture of rollout r1 incomplete" in m for m in messages)


def test_read_capture_builds_valid_records_with_normalised_tokens(
    start_gateway, tmp_path: Path
) -> None:
    script = [{"error": 429, "times": 1}, {"tool": "ls"}, {"text": "Done."}]
    client = _client(start_gateway(ScriptedUpstream(script)), "rc-1", max_retries=1)
    first = client.chat.completions.create(model="policy", messages=USER, tools=[BASH_CHAT_TOOL])
    history = [*USER, first.choices[0].message.model_dump(exclude_none=True)]
    history.append({"role": "tool", "tool_call_id": "x", "content": "ok"})
    stream = client.chat.completions.create(
        model="policy",
        messages=history,
        tools=[BASH_CHAT_TOOL],
        stream=True,
        stream_options={"include_usage": True},
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Done."

    attachment = read_capture(tmp_path / "capture", "rc-1")
    ModelCallCapture.model_validate(attachment)
    records = [ModelCallRecord.model_validate(c) for c in attachment["calls"]]
    assert [r.call_index for r in records] == [0, 1, 2]
    failed, tool, text = records
    assert (failed.status_code, failed.error_category, failed.tokens_in) == (
        429,
        "rate_limit",
        None,
    )
    assert failed.tool_calls is None
    assert (tool.tokens_in, tool.tokens_out, tool.tokens_total) == (21, 8, 29)
    assert (tool.tokens_reasoning, tool.cached_tokens, tool.cache_hit) == (2, 3, True)
    assert tool.finish_reason == "tool_calls" and tool.tool_calls[0]["function"]["name"] == "bash"
    assert tool.response_id == first.id and tool.model == "policy"
    assert text.finish_reason == "stop" and text.tokens_in == 22 and text.response_raw
    assert text.latency_ttft_ms is not None and text.latency_total_ms >= text.latency_ttft_ms
    assert attachment["metrics"] == {
        "model_calls": 3,
        "failed_model_calls": 1,
        "tokens_in": 43,
        "tokens_out": 16,
        "tokens_total": 59,
    }
    assert attachment["gaps"] == []

    bare = read_capture(tmp_path / "capture", "rc-1", include_payloads=False)
    assert all(c["request"] is None and c["response_raw"] is None for c in bare["calls"])
    assert [c["tokens_in"] for c in bare["calls"]] == [None, 21, 22]


def test_read_capture_gaps(tmp_path: Path) -> None:
    assert [g["code"] for g in read_capture(tmp_path, "none")["gaps"]] == [
        "model_call_capture_no_records"
    ]
    capture_path(tmp_path, "junk").write_text('{"not": "an exchange"}\nnot json\n')
    incomplete_marker(tmp_path, "junk").touch()
    gaps = read_capture(tmp_path, "junk")["gaps"]
    assert gaps == [
        {
            "code": "model_call_capture_records_unreadable",
            "invocation_id": None,
            "detail": "count=2",
        },
        {"code": "model_call_capture_incomplete", "invocation_id": None, "detail": None},
        {"code": "model_call_capture_no_records", "invocation_id": None, "detail": None},
    ]


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {"prompt_tokens": 10, "completion_tokens": 4},
            {"tokens_in": 10, "tokens_out": 4, "tokens_total": 14},
        ),
        (
            {
                "input_tokens": 7,
                "output_tokens": 3,
                "total_tokens": 11,
                "input_tokens_details": {"cached_tokens": 5},
                "output_tokens_details": {"reasoning_tokens": 1},
            },
            {"tokens_in": 7, "tokens_total": 11, "cached_tokens": 5, "tokens_reasoning": 1},
        ),
        (
            {
                "input_tokens": 4,
                "output_tokens": 2,
                "cache_read_input_tokens": 100,
                "cache_creation_input_tokens": 20,
            },
            {"tokens_in": 124, "tokens_total": 126, "cached_tokens": 100},
        ),
        (
            {"input_tokens": 4, "cache_creation_input_tokens": 20},
            {"tokens_in": 24, "cache_creation_tokens": 20, "tokens_total": None},
        ),
        (
            {"prompt_tokens": -1, "completion_tokens": True, "total_tokens": "9"},
            {"tokens_in": None, "tokens_out": None, "tokens_total": None},
        ),
        ({"reasoning_output_tokens": 6}, {"tokens_reasoning": 6, "cached_tokens": None}),
        (None, {"tokens_in": None, "cache_creation_tokens": None}),
    ],
)
def test_normalise_usage(usage: object, expected: dict) -> None:
    tokens = normalise_usage(usage)
    assert {k: tokens[k] for k in expected} == expected


def _exchange(n: int) -> dict:
    return {
        "model_call_id": f"mc_{n}",
        "dialect": "chat",
        "model_ref": {"name": "policy_model"},
        "started_at": 1.0,
        "completed_at": 2.0,
        "latency_ms": 1000.0,
        "latency_ttft_ms": None,
        "status_code": 200,
        "error_category": None,
        "request": {"model": "policy", "messages": USER},
        "response": {"id": f"chatcmpl-{n}", "choices": []},
        "request_raw": None,
        "response_raw": None,
        "client_session_id": None,
    }


def test_a_failed_write_is_cut_back_to_the_last_whole_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Half a line reaches the file, then the disk is full: the file keeps its whole lines
    only, and the marker says it under-reports."""
    writer = CaptureWriter(tmp_path)
    try:
        assert writer.append("r", _exchange(0)).result(timeout=30) is True
        write = os.write
        attempts: list[int] = []

        def half_then_full(fd: int, data: memoryview) -> int:
            attempts.append(fd)
            if len(attempts) > 1:
                raise OSError(errno.ENOSPC, "No space left on device")
            return write(fd, bytes(data[: len(data) // 2]))

        monkeypatch.setattr(os, "write", half_then_full)
        assert writer.append("r", _exchange(1)).result(timeout=30) is False
        monkeypatch.undo()
        assert writer.append("r", _exchange(2)).result(timeout=30) is True
    finally:
        writer.close()
    assert len(attempts) == 2
    assert [line["model_call_id"] for line in capture_lines(tmp_path, "r")] == ["mc_0", "mc_2"]
    assert incomplete_marker(tmp_path, "r").exists()


def test_a_line_over_the_cap_keeps_everything_but_its_payloads(tmp_path: Path) -> None:
    """JSON escaping can grow a body past the caps: the line is kept without its payloads,
    and the marker says the capture under-reports."""
    writer = CaptureWriter(tmp_path, max_line_bytes=2048)
    try:
        escaped = {**_exchange(0), "request_raw": "\x01" * 1000}  # 6 bytes each in JSON
        assert writer.append("r", escaped).result(timeout=30) is True
    finally:
        writer.close()
    [line] = capture_lines(tmp_path, "r")
    assert (line["model_call_id"], line["status_code"]) == ("mc_0", 200)
    assert [line[k] for k in ("request", "response", "request_raw", "response_raw")] == [None] * 4
    assert incomplete_marker(tmp_path, "r").exists()


def test_many_files_at_once_keep_each_files_order(tmp_path: Path) -> None:
    writer = CaptureWriter(tmp_path)
    try:
        futures = [writer.append(f"r{file}", _exchange(n)) for n in range(20) for file in range(50)]
    finally:
        writer.close()  # every line queued is on disk when it returns
    assert all(future.result(timeout=0) for future in futures)
    for file in range(50):
        lines = capture_lines(tmp_path, f"r{file}")
        assert [line["model_call_id"] for line in lines] == [f"mc_{n}" for n in range(20)]


def test_a_loop_s_lines_wake_it_once_for_many(tmp_path: Path) -> None:
    """The gateway awaits each line on its event loop: the lines of a file, and those written
    while the loop is busy, are settled with one wake-up of it, not one a line (each wake-up
    is a write to the loop's self-pipe and a turn of the loop)."""
    wakeups = []

    class Counted(asyncio.SelectorEventLoop):
        def call_soon_threadsafe(self, *args, **kwargs):  # type: ignore[override]
            wakeups.append(args[0])
            return super().call_soon_threadsafe(*args, **kwargs)

    async def lines() -> list[bool]:
        pending = [writer.append_async(f"r{n % 50}", _exchange(n)) for n in range(500)]
        return await asyncio.gather(*pending)

    writer = CaptureWriter(tmp_path)
    loop = Counted()
    try:
        assert loop.run_until_complete(lines()) == [True] * 500
    finally:
        loop.close()
        writer.close()
    assert 1 <= len(wakeups) < 250  # 10 lines a file: at most one wake-up a file a batch
    for file in range(50):
        lines_of_file = capture_lines(tmp_path, f"r{file}")
        assert [line["model_call_id"] for line in lines_of_file] == [
            f"mc_{n}" for n in range(file, 500, 50)
        ]


def test_a_line_nobody_waits_for_any_more_does_not_stop_the_writer(tmp_path: Path) -> None:
    """A waiter that gave up (its future cancelled: a streaming client that went away while
    its line was being written) or whose loop has closed is skipped; the line is still
    written and the writer goes on. (Setting a cancelled future's result raises: it had
    stopped the writer thread, and every later capture, and so every later answer, waited
    for ever.)"""
    writer = CaptureWriter(tmp_path)
    try:
        writer.append("cancelled", _exchange(4)).cancel()

        async def give_up() -> None:
            writer.append_async("gave-up", _exchange(0)).cancel()
            assert await writer.append_async("waited", _exchange(1)) is True

        asyncio.run(give_up())

        async def leave() -> None:
            writer.append_async("left", _exchange(2))

        asyncio.run(leave())  # closes its loop before the line is written
        assert writer.append("after", _exchange(3)).result(timeout=30) is True
    finally:
        writer.close()
    for name, n in (("gave-up", 0), ("waited", 1), ("left", 2), ("after", 3), ("cancelled", 4)):
        assert [line["model_call_id"] for line in capture_lines(tmp_path, name)] == [f"mc_{n}"]


def test_a_streaming_client_gone_while_its_line_is_written_holds_up_no_later_call(
    start_gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream's last line is on disk before its end goes out; a client that hangs up while
    that line is being written has its wait cancelled, and the next client is answered."""
    fsync, slow = os.fsync, threading.Event()

    def slow_fsync(fd: int) -> None:
        if slow.is_set():
            time.sleep(1.0)  # the client hangs up meanwhile
        fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    gateway = start_gateway(ScriptedUpstream([{"text": "Done.", "times": 2}]))
    client = _client(gateway, "gone-1", max_retries=0, timeout=20)
    slow.set()
    stream = client.chat.completions.create(model="policy", messages=USER, stream=True)
    next(iter(stream))
    stream.close()
    time.sleep(1.5)  # the cancelled line reaches the disk
    slow.clear()
    done = client.chat.completions.create(model="policy", messages=USER)
    assert done.choices[0].message.content == "Done."
    assert [line["status_code"] for line in capture_lines(tmp_path / "capture", "gone-1")] == [
        200,
        200,
    ]


def test_a_per_invocation_url_names_the_session_of_every_call(
    start_gateway, tmp_path: Path
) -> None:
    """Harnesses that send no session header of ours (or their own) still have each call on
    their invocation's URL recorded as made in that invocation; a bad id in the URL is a 400."""
    gateway = start_gateway(ScriptedUpstream([{"text": "Done."}]))
    url = gateway.url_for("inv-1", "activation-1")
    token = gateway.paths.token("inv-1", "activation-1")
    assert url.endswith(f"/ng-rollout/inv-1/invocation/activation-1/{token}/v1")
    client = OpenAI(base_url=url, api_key="dummy", default_headers={"session-id": "theirs"})
    client.chat.completions.create(model="policy", messages=USER)
    plain = OpenAI(base_url=gateway.url_for("inv-1"), api_key="dummy")
    plain.with_options(default_headers={"x-session-id": "root"}).models.list()
    plain.chat.completions.create(model="policy", messages=USER, extra_headers={"session-id": "x"})
    sessions = [line["client_session_id"] for line in capture_lines(tmp_path / "capture", "inv-1")]
    assert sessions == ["activation-1", "x"]
    bad = httpx2.post(url.replace("activation-1", "-bad") + "/responses", json={"input": "hi"})
    assert bad.status_code == 400 and "-bad" in bad.json()["error"]["message"]
