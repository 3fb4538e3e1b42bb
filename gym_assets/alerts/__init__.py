"""Alerts about failed asset checks: an append-only JSONL log, and an optional webhook.

    alert.py     what one alert says (asset, partition, check, severity, reason, run link)
    log.py       the log under the data root: every alert lands there first
    webhook.py   a Slack-compatible POST with retries and a bounded wait
    deliver.py   log first, then the webhook, whose failures are reported, never raised

No Dagster here: ``gym_assets/defs/alerts/`` reads check evaluations of finished runs and hands
them over.
"""
