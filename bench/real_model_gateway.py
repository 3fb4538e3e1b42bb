"""What the model gateway adds to a call to a real model server, against calling it directly.

    .venv/bin/python bench/real_model_gateway.py [--calls 18] [--max-tokens 32]

One llama.cpp server (``gym-assets model install`` must have been run: SmolLM2-135M on this
machine's cores) and one gateway process in front of it (``--upstream openai``, the API asked
for as a run asks, captured calls as a run makes them). The same prompts, deterministic
(temperature 0, a token cap), go one at a time three ways: to the server (the floor), through
the gateway as Chat calls (passed through) and as Responses calls (translated to the same Chat
call), plain and streamed. Per way and mode: the median wall time of a call, the median of
what each call took beyond the same prompt's direct call (added), and the ratio 1 + added /
the direct median; the CPU a call of the gateway process, and its share of the server's CPU a call
(the work of answering).

Bars: through the gateway a call takes at most 1.10 x the direct call's wall time (the ratio), and
the gateway spends at most 5% of the server's CPU a call. Exit 1 when one is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
import psutil

from gym_assets.local_services.model_install import ModelInstall
from gym_assets.local_services.model_server import MODEL_ALIAS, serving
from gym_assets.rollouts.collection.gateway_process import GatewayProcess
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.workspace import Workspace

LATENCY_RATIO = 1.10
CPU_SHARE = 0.05
PROMPTS = (
    "Name three colours.",
    "What is the capital of France? Answer in one sentence.",
    "Write a Python function that adds two numbers.",
)
KEY_ENV = "GYM_BENCH_MODEL_KEY"
PATHS = ("direct", "gateway", "translated")


@dataclass
class Side:
    """The calls of one path (direct or through the gateway) in one mode."""

    walls: list[float]
    cpu: float = 0.0  # seconds: the server's for direct calls, the gateway's for the others

    def median_ms(self) -> float:
        return statistics.median(self.walls) * 1000


def _process(match: str) -> psutil.Process:
    (found,) = [
        p for p in psutil.Process().children(recursive=True) if match in " ".join(p.cmdline())
    ]
    return found


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _body(path: str, prompt: str, stream: bool, cap: int) -> tuple[str, dict]:
    """The route and body of one call: Chat to the server, or a Responses call the gateway
    translates to the same Chat call (``seed`` has no Responses counterpart; temperature 0 keeps
    the answer the same)."""
    if path == "translated":
        body = {"model": MODEL_ALIAS, "input": prompt, "max_output_tokens": cap}
        return "responses", body | {"temperature": 0, "stream": stream}
    body = {"model": MODEL_ALIAS, "messages": [{"role": "user", "content": prompt}]}
    return "chat/completions", body | {
        "temperature": 0,
        "seed": 7,
        "max_tokens": cap,
        "stream": stream,
    }


async def _call(session: aiohttp.ClientSession, url: str, body: tuple[str, dict]) -> float:
    route, payload = body
    started = time.perf_counter()
    async with session.post(f"{url}/{route}", data=orjson.dumps(payload)) as answer:
        await answer.read()  # a stream is read to its end
        if answer.status != 200:
            raise RuntimeError(f"{url}/{route}: HTTP {answer.status}")
    return time.perf_counter() - started


async def _measure(direct: str, gateway: GatewayProcess, calls: int, cap: int):
    """Each call's prompt goes every way in turn, in an order that rotates so that each prompt
    goes first each way equally often: the server reuses the previous prompt's evaluated
    prefix, which favours whichever way comes later."""
    server, proxy = _process("llama_cpp.server"), _process("gateway_process")
    results: dict[bool, dict[str, Side]] = {}
    headers = {"content-type": "application/json", "authorization": "Bearer local"}
    async with aiohttp.ClientSession(headers=headers) as session:
        for prompt in PROMPTS:  # warm-up: the server's first answers load its caches
            await _call(session, direct, _body("direct", prompt, False, cap))
        for stream in (False, True):
            sides = {path: Side([]) for path in PATHS}
            for n in range(calls):
                prompt = PROMPTS[n % len(PROMPTS)]
                turn = n // len(PROMPTS) % len(PATHS)  # each prompt meets each order
                for path in PATHS[turn:] + PATHS[:turn]:
                    url = direct if path == "direct" else gateway.url_for(f"b{int(stream)}-{n}")
                    watched = server if path == "direct" else proxy
                    before = _cpu(watched)
                    sides[path].walls.append(
                        await _call(session, url, _body(path, prompt, stream, cap))
                    )
                    sides[path].cpu += _cpu(watched) - before
            results[stream] = sides
    return results


async def _bench(base_url: str, calls: int, cap: int, captures: Path):
    upstream = upstream_config(
        mode="openai", base_url=base_url, api_key_env=KEY_ENV, model=MODEL_ALIAS
    )
    gateway = GatewayProcess(
        upstream, captures, model_name=MODEL_ALIAS, model_server_name="bench_model"
    )
    async with gateway:
        return await _measure(base_url, gateway, calls, cap)


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench/real_model_gateway.py", description=__doc__)
    parser.add_argument(
        "--calls", type=int, default=18, help="calls each way per mode (a multiple of 9 balances)"
    )
    parser.add_argument("--max-tokens", type=int, default=32, help="the answers' token cap")
    args = parser.parse_args()
    install = ModelInstall.default(Workspace.resolve().configs)
    if not install.installed():
        print("the model server is not installed: run `make model` first", file=sys.stderr)
        return 1
    os.environ.setdefault(KEY_ENV, "local")
    with tempfile.TemporaryDirectory() as tmp, serving(install, Path(tmp) / "server.log") as url:
        results = asyncio.run(_bench(url, args.calls, args.max_tokens, Path(tmp) / "captures"))
    ok = True
    print("mode    path        median ms  added ms  ratio  CPU ms/call  share of server CPU")
    for stream, sides in results.items():
        floor = sides["direct"]
        for path, side in sides.items():
            added = statistics.median(a - b for a, b in zip(side.walls, floor.walls, strict=True))
            ratio = 1 + added / statistics.median(floor.walls)
            share = side.cpu / floor.cpu
            if path != "direct":
                ok &= ratio <= LATENCY_RATIO and share <= CPU_SHARE
            print(
                f"{'stream' if stream else 'plain':6}  {path:10}  {side.median_ms():9.1f}  "
                f"{added * 1000:8.1f}  {ratio:5.3f}  {side.cpu / args.calls * 1000:11.2f}  "
                f"{share:19.4f}"
            )
    print(f"bars: ratio <= {LATENCY_RATIO}, share <= {CPU_SHARE}: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
