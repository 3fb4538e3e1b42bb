"""The rollout record: the one contract every producer writes and every reader reads.

The bottom of the library (it imports nothing of ours but itself): environment servers,
agents, harness adapters and collection build records through these types; the judge, the
reports and Dagster read them.

- ``keys``: the ``_ng_*`` and ``ng_*`` keys of a row, named once.
- ``ids``: the rollout-id rule (``<task>-<rollout>``, an explicit id, ``-a<n>`` per attempt).
- ``stamps``: ``RolloutStamps``, the collector keys every row of an attempt carries.
- ``evidence``: the record, trajectory, observations and capture models, and their schemas.
- ``episode``: the wire types of one episode (request, response, failure vocabulary).
- ``contracts``: what an environment server, a resources server and the gateway provide.
"""
