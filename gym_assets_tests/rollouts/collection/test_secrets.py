"""A run's secrets reach none of its files (docs/rollouts.md): a model server that echoes the
API key, in an answer or in an error, leaves it in no record, failure, capture or report; and
what the harness sandbox logged stays with the run."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx2
import pytest

from gym_assets.redaction import REDACTED, Redactor
from gym_assets.rollouts.collection.files import read_jsonl
from gym_assets.rollouts.gateway import ModelGateway
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.gateway.upstreams import OpenAIUpstream
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import run_rollouts
from gym_assets_tests.loopback_http import serving

KEY = "sk-echoed-3f9a1c77d2b84e06"


def _echoing(status: int) -> type[BaseHTTPRequestHandler]:
    """A model server that puts the key it was sent into its answer (200) or its error."""

    class Echoing(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            key = self.headers["authorization"].removeprefix("Bearer ")
            if status == 200:
                text = {"type": "output_text", "text": f"your key is {key}"}
                body = {
                    "id": "resp_1", "object": "response", "created_at": 1, "model": "m",
                    "status": "completed", "usage": None,
                    "output": [{"type": "message", "role": "assistant", "content": [text]}],
                }  # fmt: skip
            else:
                message = f"Incorrect API key provided: {key}"
                body = {"error": {"message": message, "type": "invalid_request_error"}}
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Echoing


@pytest.mark.parametrize("status", [200, 401])
def test_an_upstream_that_echoes_the_key_leaves_it_in_no_file(
    products, tmp_path, monkeypatch, status
) -> None:
    products.plan("arith")
    monkeypatch.setenv("GYM_ASSETS_TEST_KEY", KEY)
    harness = load_harnesses(products.catalog.loaded)["minimal_agent"]
    with serving(_echoing(status)) as port:
        upstream = upstream_config(
            mode="openai", base_url=f"http://127.0.0.1:{port}/v1", api_key_env="GYM_ASSETS_TEST_KEY"
        )
        result = run_rollouts(
            products.catalog, "arith", harness, tmp_path / "run", upstream, RunOptions(limit=1)
        )
    written = [p for p in result.files.out_dir.rglob("*") if p.is_file()]
    assert [p for p in written if KEY.encode() in p.read_bytes()] == []
    captures = list(result.files.capture_dir.glob("*.capture.jsonl"))
    assert captures and all(REDACTED.encode() in p.read_bytes() for p in captures)
    rows = [*read_jsonl(result.files.records), *read_jsonl(result.files.failures)]
    assert rows
    # the harness sandbox's network log stays with the run, beside the capture
    (network,) = result.files.capture_dir.glob("*.network.jsonl")
    assert json.loads(network.read_text().splitlines()[0])["event"] == "sandbox_ready"


def test_an_echoed_key_never_reaches_the_agent(tmp_path, monkeypatch) -> None:
    """The gateway's answer to the harness is redacted too, so a model-driven harness never
    holds the key (a stream is relayed as it arrives: its capture and record are redacted)."""
    monkeypatch.setenv("GYM_ASSETS_TEST_KEY", KEY)
    with serving(_echoing(401)) as port:
        upstream = OpenAIUpstream(f"http://127.0.0.1:{port}/v1", "GYM_ASSETS_TEST_KEY")
        redactor = Redactor.of_env(["GYM_ASSETS_TEST_KEY"])
        with ModelGateway(upstream, tmp_path / "captures", redactor=redactor) as gateway:
            body = {"model": "m", "input": "hi"}
            answer = httpx2.post(gateway.url_for("r1") + "/responses", json=body, timeout=30)
    assert answer.status_code == 401 and KEY not in answer.text and REDACTED in answer.text


def test_the_key_is_replaced_as_written_and_as_json_escapes_it() -> None:
    secret = 'key"with/üñí\\code'
    redactor = Redactor([secret, "short"])
    for ascii_only in (True, False):
        line = json.dumps({"m": f"a {secret} b"}, ensure_ascii=ascii_only).encode()
        assert json.loads(redactor.data(line)) == {"m": f"a {REDACTED} b"}
    assert redactor.data(f"x{secret}y".encode()) == f"x{REDACTED}y".encode()
    assert redactor.data(b"short stays") == b"short stays"  # too short to be a secret
    assert Redactor.of_env(["UNSET_VARIABLE", None], {}).data(secret.encode()) == secret.encode()


def test_nothing_is_redacted_without_a_key(tmp_path: Path) -> None:
    assert upstream_config(mode="reference").redactor().data(KEY.encode()) == KEY.encode()
