"""Capability paths: a rollout's base URL carries a token only the gateway can make.

Rollout and invocation ids are predictable (``<task>-<rollout>``, ``root``), and a harness
can reach the gateway, so an id alone would let one rollout's harness write into another
rollout's capture. Each base URL therefore holds, after the ids, an HMAC of them under a key
made per gateway with ``secrets``: a caller can use the URLs it was given and make no other.
The token is derived rather than stored so that ``url_for`` needs no round trip to the gateway
(which may run in another process: it is handed the key when it starts).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from gym_assets.records.ids import ROLLOUT_ID_PATTERN, is_rollout_id

ROLLOUT_PREFIX = "/ng-rollout"
INVOCATION_PREFIX = "/invocation"
KEY_BYTES = 32


def new_key() -> str:
    """A fresh capability key (URL-safe text, so it travels in a JSON spec)."""
    return secrets.token_urlsafe(KEY_BYTES)


class CapabilityPaths:
    """Makes and checks the capability paths of one gateway."""

    def __init__(self, key: str) -> None:
        self._key = key.encode()

    def token(self, rollout_id: str, invocation_id: str | None) -> str:
        message = f"{rollout_id}\0{invocation_id or ''}".encode()
        digest = hmac.new(self._key, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def allows(self, rollout_id: str, invocation_id: str | None, token: str) -> bool:
        """Whether ``token`` is the one this gateway made for the ids (in constant time)."""
        return hmac.compare_digest(self.token(rollout_id, invocation_id), token)

    def url(self, origin: str, rollout_id: str, invocation_id: str | None = None) -> str:
        """The base URL whose calls a gateway serving at ``origin`` captures under
        ``rollout_id``; with ``invocation_id``, every call made on it is also recorded as made
        in that invocation's session (``client_session_id``), whatever header the client sends."""
        check_id(rollout_id)
        if not origin:
            raise RuntimeError("start the gateway before asking for its URLs")
        path = f"{ROLLOUT_PREFIX}/{rollout_id}"
        if invocation_id is not None:
            check_id(invocation_id)
            path += f"{INVOCATION_PREFIX}/{invocation_id}"
        return f"{origin}{path}/{self.token(rollout_id, invocation_id)}/v1"


def check_id(rollout_id: str) -> None:
    if not is_rollout_id(rollout_id):
        raise ValueError(f"rollout id {rollout_id!r} must match {ROLLOUT_ID_PATTERN.pattern}")
