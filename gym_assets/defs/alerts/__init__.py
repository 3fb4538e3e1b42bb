"""Alerts on failed asset checks: the sink resource and the sensors that feed it."""
