"""Whether a run may verify model-written code, and with which isolation.

One policy per run: the first server that runs model code resolves it (finds bubblewrap and
starts one guest to prove the namespaces work here) and everyone after shares the answer. When
no sandbox can be made the run is refused before any rollout starts, unless the user passed
``--allow-unsandboxed`` (then every record says ``sandbox: none``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gym_assets.sandbox.isolation import (
    INSTALL_HINT,
    Isolation,
    Limits,
    SandboxUnavailable,
    find_isolation,
)
from gym_assets.sandbox.session import GuestSession, SandboxStartError


@dataclass
class SandboxPolicy:
    allow_unsandboxed: bool = False
    _resolved: Isolation | None = field(default=None, init=False, repr=False)

    def isolation(self) -> Isolation:
        if self._resolved is None:
            self._resolved = self._resolve()
        return self._resolved

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
