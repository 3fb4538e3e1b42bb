"""Episode machinery shared by environment servers, agents and resources servers.

* ``cleanup``  — the LIFO cleanup stack every episode unwinds, even on failure or cancellation.
* ``sessions`` — seed/close bookkeeping with the idempotency rules of resources and agents.
* ``failures`` — mapping exceptions to stage failures (terminal or retryable).
* ``runner``   — the protocol-neutral part of an environment server's ``run``.
* ``agents``   — the in-process agent contract and Responses-object helpers.
* ``resources``— the session-keeping base of the bundled resources servers.
* ``registry`` — build environment and resources servers from a resolved config.
"""
