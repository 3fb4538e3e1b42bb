"""The model gateway: an OpenAI-compatible loopback endpoint that captures every exchange per
rollout and answers from a script, a per-rollout reference script, or a real model server."""

from gym_assets.rollouts.gateway.capture import read_capture
from gym_assets.rollouts.gateway.script import ScriptError
from gym_assets.rollouts.gateway.server import ModelGateway
from gym_assets.rollouts.gateway.upstreams import (
    ModelRequest,
    OpenAIUpstream,
    ReferenceUpstream,
    ScriptedUpstream,
    Upstream,
    UpstreamFailure,
    UpstreamReply,
)

__all__ = [
    "ModelGateway",
    "ModelRequest",
    "OpenAIUpstream",
    "ReferenceUpstream",
    "ScriptError",
    "ScriptedUpstream",
    "Upstream",
    "UpstreamFailure",
    "UpstreamReply",
    "read_capture",
]
