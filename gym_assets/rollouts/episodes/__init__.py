"""Episode machinery shared by environment servers, agents and resources servers.

* ``runner``       — the protocol-neutral part of an environment server's ``run``.
* ``cleanup``      — the LIFO cleanup stack every episode unwinds, even on failure or cancel.
* ``failures``     — exceptions to stage failures (terminal or retryable).
* ``sessions``     — seed/close bookkeeping with the idempotency rules of resources and agents.
* ``agents``       — the in-process agent contract and the agents' shared session machine.
* ``model_calls``  — model calls through the gateway, either dialect, on one bounded aiohttp
                    session per run.
* ``model_http``   — one JSON POST on aiohttp, retried and failing as the ``openai`` SDK's.
* ``observations`` — ``ng_agent_observations`` bundles built through the evidence models.
* ``resources``    — the session-keeping base of the bundled resources servers.
* ``responses``    — reading Responses objects and input items.
* ``legacy``       — flat rows: identity, episode request, ``_ng_failure_*`` answers.
* ``registry``     — build environment and resources servers from a resolved config.
"""
