"""Alerts about failed asset checks and failed runs: an append-only JSONL log, and an optional
webhook.

    alert.py     what one alert says (a check: asset, partition, check, severity, reason; a run:
                 job, partition, error), with the run's link
    log.py       the log under the data root: every alert lands there first
    webhook.py   a Slack-compatible POST with retries and a bounded wait
    deliver.py   log first, then the webhook, whose failures are reported, never raised

No Dagster here: ``gym_assets/defs/alerts/`` reads finished runs and their check evaluations
and hands them over.
"""
