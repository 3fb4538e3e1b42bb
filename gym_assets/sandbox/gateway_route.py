"""The host half of a sandboxed harness's route to the model gateway.

A Unix socket, bound into the sandbox, whose every connection is carried to the gateway's TCP
address; the sandbox's relay (``harness_init``) is the other half. It runs in the event loop
of the process that runs the activation, one per activation, and closing it cuts every
connection still open.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from types import TracebackType

from gym_assets.sandbox.harness_init import join


class GatewayRoute:
    def __init__(self, socket_path: Path, host: str, port: int) -> None:
        self.socket_path = socket_path
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None
        self._carrying: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> GatewayRoute:
        self._server = await asyncio.start_unix_server(self._carry, path=str(self.socket_path))
        os.chmod(self.socket_path, 0o666)  # the sandbox's relay runs under a uid of its own
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._carrying):
            task.cancel()
        for task in list(self._carrying):
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()

    async def _carry(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._carrying.add(task)
        try:
            gateway = await asyncio.open_connection(self.host, self.port)
            await join((reader, writer), gateway)
        except OSError:
            writer.close()
        finally:
            self._carrying.discard(task)
