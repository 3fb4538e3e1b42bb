"""The installed model's server on a free loopback port, for as long as a ``with`` block runs.

llama.cpp's server speaks Chat Completions (plain and streamed) and legacy completions, and
answers ``/v1/responses`` with 404: a Responses agent reaches it through the gateway's dialect
translation (``--upstream-api chat``, or ``auto``, which finds that out). Its streams carry no
usage chunk.

The model's own chat template (in the GGUF file) concatenates each message's ``content`` as a
string, so the server fails (a streamed call gets a 200 with no data) on content given as a list
of parts, which Chat Completions allows and pi sends. ``chat_template.json`` is the same ChatML
layout reading text parts too; it is handed to the server in a tokenizer config, whose handler
closes the prompt with an empty assistant message (the template opens that turn instead).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from gym_assets.errors import UserError
from gym_assets.local_dagster import free_port, start_program, stop_program
from gym_assets.local_services.model_install import ModelInstall

MODEL_ALIAS = "smollm2"
CONTEXT_TOKENS = 8192  # the model's own; Codex's first request alone is 4,600 tokens
CHAT_TEMPLATE = Path(__file__).with_name("chat_template.json")
READY_TIMEOUT_S = 120.0  # about 5 s on a quiet machine; loaded cores stretch the model's load
UPSTREAM_API = "chat"  # what it speaks (docs/rollouts.md: which API the server speaks)
API_KEY_ENV = "GYM_LOCAL_MODEL_KEY"
API_KEY = "local-model"  # the server checks none; an openai upstream still names a variable


def server_argv(install: ModelInstall, port: int) -> list[str]:
    """``llama_cpp.server`` on loopback, the model under its alias (what ``--model`` asks for)."""
    return [
        str(install.python),
        "-m",
        "llama_cpp.server",
        "--model",
        str(install.weights()),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(CONTEXT_TOKENS),
        # by default a new request ends the stream in progress: runs have rollouts in parallel
        "--interrupt_requests",
        "false",
        "--chat_format",
        "hf-tokenizer-config",
        "--hf_tokenizer_config_path",
        str(CHAT_TEMPLATE),
    ]


@contextmanager
def serving(install: ModelInstall, log: Path, port: int | None = None) -> Iterator[str]:
    """Start the server (its output in ``log``), yield its base URL once ``/v1/models`` answers,
    stop it (and anything it started) on the way out, Ctrl-C included."""
    if not install.installed():
        raise UserError(
            f"the model server is not installed in {install.venv}; run `gym-assets model install`"
        )
    port = port or free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    log.parent.mkdir(parents=True, exist_ok=True)
    process = start_program(server_argv(install, port), log, cwd=install.root)
    try:
        _wait_ready(base_url, process.poll, log)
        yield base_url
    finally:
        stop_program(process)


def _wait_ready(base_url: str, exited: Callable[[], int | None], log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        code = exited()
        if code is not None:
            raise UserError(f"the model server exited with code {code} before answering", path=log)
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as answer:
                if any(m.get("id") == MODEL_ALIAS for m in json.load(answer).get("data", [])):
                    return
        except (OSError, ValueError, urllib.error.URLError):
            pass
        time.sleep(0.25)
    raise UserError(
        f"the model server did not answer {base_url}/models in {READY_TIMEOUT_S:.0f} s", path=log
    )


def rollouts_hint(base_url: str) -> str:
    """The command line that runs a benchmark against the server (printed by ``model serve``)."""
    return (
        f"{API_KEY_ENV}={API_KEY} gym-assets rollouts --benchmark arith "
        f"--harness simple_agent --out runs/arith-local --upstream openai --base-url {base_url} "
        f"--api-key-env {API_KEY_ENV} --model {MODEL_ALIAS} --upstream-api {UPSTREAM_API}"
    )
