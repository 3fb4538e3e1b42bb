"""Running model-written code where it can neither escape nor forge a verdict.

The candidate's code runs in a guest interpreter inside the sandbox; the trusted side calls its
functions over a pipe with plain data only and computes every verdict itself.

* ``isolation``  — bubblewrap's namespaces, binds and uid drop; the limits; finding the tool.
* ``policy``     — per run: which isolation, or a refusal unless ``--allow-unsandboxed``.
* ``session``    — the trusted side of one candidate's guest: load, call, end; single-use
                   sandboxes.
* ``workers``    — warm sandboxes reused task after task (a fork and a fresh uid per task).
* ``guest``      — the program inside the sandbox that serves a candidate (stdlib only).
* ``zygote``     — a warm sandbox's resident, forking one task process per task (stdlib only).
* ``syscall_filter`` — the seccomp filters the sandboxes install on themselves: a guest's (no
                   kernel keys, no memory outside its address space) and a harness
                   activation's (no kernel keys) (stdlib only).
* ``plain_data`` — the exact-type, bounded wire format both sides share (stdlib only).

A command or cli harness, which runs the shell commands a model chose, gets a sandbox of its
own per activation, whose only network is a route to the model gateway:

* ``harness_sandbox`` — its bubblewrap argv, view, limits and host-side files.
* ``harness_init``    — its first program: resolver stub, gateway relay, outside-attempt log,
                        then the harness without privileges (stdlib only).
* ``gateway_route``   — the host half of the route: a Unix socket carried to the gateway.

See docs/security.md for the threat model and what is (not) guaranteed.
"""

from gym_assets.sandbox.isolation import Isolation, Limits, SandboxUnavailable, find_isolation
from gym_assets.sandbox.policy import SandboxPolicy
from gym_assets.sandbox.session import (
    TIMED_OUT,
    CandidateRaised,
    Channel,
    GuestFault,
    GuestSession,
    SandboxStartError,
)
from gym_assets.sandbox.workers import GuestPool

__all__ = [
    "TIMED_OUT",
    "CandidateRaised",
    "Channel",
    "GuestFault",
    "GuestPool",
    "GuestSession",
    "Isolation",
    "Limits",
    "SandboxPolicy",
    "SandboxStartError",
    "SandboxUnavailable",
    "find_isolation",
]
