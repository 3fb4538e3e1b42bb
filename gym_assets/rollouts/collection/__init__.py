"""Collection: the planned rollouts of a run, dispatched once each and accounted for.

- ``inputs``: the stamped inventory of planned rollouts; ``plan_gate``: the plan's digests.
- ``dispatch``: one rollout through its environment server into one row.
- ``records``, ``trajectory``: the rows written and the trajectory projected into them.
- ``ledger``, ``files``, ``metrics``, ``checks``: what is on disk, resume, totals, checks.
- ``gateway_process``, ``model_gateway``: the run's model gateway; ``overrides``,
  ``corruption``, ``progress``: run options applied, progress. The products a run needs are
  made current by ``gym_assets.plans.products``.
"""
