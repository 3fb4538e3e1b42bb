"""Dagster wiring. Everything here is thin: assets, checks and sensors call the library."""
