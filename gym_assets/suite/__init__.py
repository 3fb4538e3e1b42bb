"""The conformance suite: run a harness under scripted scenarios and have the judge rule.

It sits above rollouts (it runs episodes through the same environment servers and gateway)
and hands the records to ``gym_assets.conformance``.

- ``scenarios``: the scripted scenarios of suite ``harness-p0-probes/v1``.
- ``scripted_provider``: the model upstream that plays a scenario and witnesses the harness.
- ``episode``, ``supervise``, ``layout``: one supervised episode and where its files go.
- ``judging``: an episode's records and witness judged into a scenario result.
- ``run``: the whole suite for a set of harnesses; ``report``: its summary and pages.
- ``harness_runs``: a harness's runs under the data root (the Dagster asset's products).
"""
