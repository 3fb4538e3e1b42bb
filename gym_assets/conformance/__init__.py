"""The judge: checks over rollout records, as data, with one executor.

It reads records (``gym_assets.records``) and never runs anything; the suite that runs
harnesses under scripted scenarios and asks for verdicts is ``gym_assets.suite``.

- ``refs``: the model-call reference grammar and its resolution.
- ``engine``: ``Check``, the ``Results`` executor, rows, the tier gate.
- ``scope``: ``EvidenceScope``, what the caller declares in scope.
- ``artifact_checks``, ``behavioral_checks``, ``health``: the three kinds of check.
- ``record_view``, ``witness``, ``witness_log``, ``fingerprint``: what the checks read.
- ``result``, ``checker``: ``check_record`` and its ``CheckerResult``.
- ``bundle``, ``inspection``, ``matrix``: a bundle of records judged into a report, and a
  matrix of reports; ``profiles`` and ``catalogue_doc``: the catalogue's names and its page.
"""
