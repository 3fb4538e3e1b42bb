"""Harness conformance: typed evidence, checks as data, one executor, per-record results.

Modules (no Dagster import anywhere here):
- ``evidence``: pydantic models of what a rollout retains (single source of truth + schemas).
- ``refs``: the model-call reference grammar and its resolution.
- ``engine``: ``Check``, the ``Results`` executor, rows, the tier gate.
- ``scope``: ``EvidenceScope`` — what the caller declares in scope.
- ``artifact_checks``: the 56 P0 artifact checks as a data catalogue.
- ``result``: ``CheckerResult`` (rows, TE verdicts, findings, token availability, gate).
- ``checker``: ``check_record`` — runs the catalogue plus caller-supplied check sources.
"""
