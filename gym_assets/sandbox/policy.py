"""Whether a run may verify model-written code, and with which isolation.

One policy per run: the first server that runs model code resolves it (finds bubblewrap and
starts one guest to prove the namespaces work here) and everyone after shares the answer. When
no sandbox can be made the run is refused before any rollout starts, unless the user passed
``--allow-unsandboxed`` (then every record says ``sandbox: none``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType

from gym_assets.sandbox.isolation import (
    INSTALL_HINT,
    Isolation,
    Limits,
    SandboxUnavailable,
    find_isolation,
)
from gym_assets.sandbox.session import GuestSession, SandboxStartError
from gym_assets.sandbox.workers import GuestPool, SingleUsePool, WarmPool


@dataclass
class SandboxPolicy:
    """Also the owner of the run's guest pools: ``close`` (or leaving the ``with`` block) ends
    every warm sandbox they hold."""

    allow_unsandboxed: bool = False
    _resolved: Isolation | None = field(default=None, init=False, repr=False)
    _pools: dict[Limits, GuestPool] = field(default_factory=dict, init=False, repr=False)

    def __enter__(self) -> SandboxPolicy:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def isolation(self) -> Isolation:
        if self._resolved is None:
            self._resolved = self._resolve()
        return self._resolved

    def guests(self, limits: Limits) -> GuestPool:
        """Where candidates under ``limits`` run: warm workers when the isolation allows them,
        else a single-use sandbox each."""
        if limits not in self._pools:
            isolation = self.isolation()
            pool = WarmPool if isolation.warm_workers else SingleUsePool
            self._pools[limits] = pool(isolation, limits)
        return self._pools[limits]

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()

    def _resolve(self) -> Isolation:
        isolation = find_isolation(allow_unsandboxed=self.allow_unsandboxed)
        if isolation.kind == "none":
            return isolation
        try:
            GuestSession(isolation, Limits()).close()
        except SandboxStartError as exc:
            if self.allow_unsandboxed:
                return Isolation("none")
            raise SandboxUnavailable(
                f"cannot isolate model-written code: bubblewrap is installed but {exc} (are "
                f"user or PID namespaces disabled here?); {INSTALL_HINT} on a host that allows "
                "namespaces, or pass --allow-unsandboxed to run it without isolation"
            ) from None
        return isolation
